import { beforeAll, describe, expect, it } from 'vitest';
import { eventually, notYet } from '../../support/eventually.js';
import { storeWaitingRun } from '../../support/pending-run.js';
import { crewTemplate, startRun } from '../crew-support.js';
import { adminToken, api, baseUrl, db, principalOf, slug, table, token } from '../helpers.js';

/**
 * E13 long polling (docs/crews.md, `wait`): with nothing at or after `start` yet and the run
 * still going, the answer waits up to `wait` seconds and comes as soon as an event is
 * written; a finished run or an event already there answers at once.
 */

let admin: string;
let user: string;

type Event = { index: number; type: string; timestamp: string; step_id?: string };

const template = (steps: unknown[]) => crewTemplate(admin, steps, 'long-poll');

const start = (templateId: string) => startRun(templateId, user);

/** Polls (without waiting) until the run has an event of `type`; answers every event so far. */
const until = (id: string, type: string): Promise<Event[]> =>
  eventually(
    async () => {
      const res = await api<Event[]>(`/api/events/${id}?start=0`, { token: user });
      return res.body.some((e) => e.type === type) ? res.body : notYet(res.body.map((e) => e.type));
    },
    20_000,
    `${type} in run ${id}`,
    50,
  );

/** One long poll: its answer and how long it took. */
async function longPoll(id: string, from: number, wait: number, as = user) {
  const sent = Date.now();
  const res = await api<Event[]>(`/api/events/${id}?start=${from}&wait=${wait}`, { token: as });
  return { res, ms: Date.now() - sent, answeredAt: Date.now() };
}

beforeAll(async () => {
  admin = await adminToken('long-poll-admin');
  user = await token(slug('long-poll-user'));
});

describe('E13 wait (long poll)', () => {
  it('answers as soon as the next event is written, not at the end of the wait', async () => {
    const id = await start(await template([{ id: 'pause', kind: 'wait', seconds: 2 }]));
    const before = await until(id, 'step.started');
    const next = before.length;
    const { res, ms, answeredAt } = await longPoll(id, next, 15);
    expect(res.status, res.text).toBe(200);
    expect(res.body[0]).toMatchObject({ index: next, type: 'step.completed', step_id: 'pause' });
    // Waited for the step (about 2 s), answered well within the 15 s...
    expect(ms).toBeGreaterThan(1000);
    expect(ms).toBeLessThan(10_000);
    // ... and within 300 ms of the event being written.
    expect(answeredAt - Date.parse(res.body[0]!.timestamp)).toBeLessThan(300);
  });

  it('answers [] after `wait` seconds when nothing is written meanwhile', async () => {
    const id = await start(await template([{ id: 'long', kind: 'wait', seconds: 5 }]));
    const before = await until(id, 'step.started');
    const { res, ms } = await longPoll(id, before.length, 1);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
    expect(ms).toBeGreaterThanOrEqual(950);
    expect(ms).toBeLessThan(3000);
  });

  it('answers at once when events are there or the run has finished', async () => {
    const id = await start(await template([{ id: 'quick', kind: 'render', template: 'hi' }]));
    const all = await until(id, 'run.completed');
    const there = await longPoll(id, 0, 20);
    expect(there.res.body).toEqual(all);
    expect(there.ms).toBeLessThan(2000);
    const past = await longPoll(id, all.length, 20);
    expect(past.res.body).toEqual([]);
    expect(past.ms).toBeLessThan(2000);
  });

  it('is the starter’s or an admin’s, answered at once for anyone else', async () => {
    const id = await start(await template([{ id: 'pause', kind: 'wait', seconds: 3 }]));
    const stranger = await token(slug('long-poll-stranger'));
    const refused = await longPoll(id, 100, 20, stranger);
    expect(refused.res.status).toBe(403);
    expect(refused.ms).toBeLessThan(2000);
    const unknown = await longPoll('00000000-0000-4000-8000-000000000000', 0, 20);
    expect(unknown.res.status).toBe(404);
    expect(unknown.ms).toBeLessThan(2000);
  });

  it('refuses a wait out of 0–20 seconds', async () => {
    const id = await start(await template([{ id: 'quick', kind: 'render', template: 'hi' }]));
    const cases: [string, string][] = [
      ['21', 'less_than_equal'],
      ['-1', 'greater_than_equal'],
      ['soon', 'int_parsing'],
      ['1.5', 'int_parsing'],
    ];
    for (const [wait, type] of cases) {
      const res = await api(`/api/events/${id}?start=0&wait=${wait}`, { token: user });
      expect(res.status, wait).toBe(422);
      expect(res.body.detail[0], wait).toMatchObject({ loc: ['query', 'wait'], type });
    }
  });

  it('serves many waiting clients at once, each answered by the event', async () => {
    const id = await start(await template([{ id: 'pause', kind: 'wait', seconds: 2 }]));
    const next = (await until(id, 'step.started')).length;
    // as many as each of two callers may hold (the fair-use limits)
    const polls = await Promise.all([
      ...Array.from({ length: 10 }, () => longPoll(id, next, 15)),
      ...Array.from({ length: 10 }, () => longPoll(id, next, 15, admin)),
    ]);
    for (const { res } of polls) {
      expect(res.status).toBe(200);
      expect(res.body[0]).toMatchObject({ index: next, type: 'step.completed' });
    }
  });
});

describe('E13 long polls waiting at once (fair use)', () => {
  /**
   * A run of `name`'s parked at an approval step, polled past its end (`start=100`): nothing
   * it may still write answers such a poll, so each waits its whole `wait`.
   */
  const parkedRun = (name: string) =>
    storeWaitingRun(
      db(),
      { crewRuns: table('crewRuns'), runLog: table('runLog') },
      { name, principal: principalOf(name) },
    );

  type Answer = { status: number; retryAfter: string | null; body: unknown } | 'abandoned';

  /** A long poll the test can abandon (the client goes away). */
  const abandonable = (id: string, as: string, client: AbortController): Promise<Answer> =>
    fetch(`${baseUrl()}/api/events/${id}?start=100&wait=20`, {
      headers: { authorization: `Bearer ${as}` },
      signal: client.signal,
    }).then(
      async (res) => ({ status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() }),
      () => 'abandoned' as const,
    );

  it('lets one caller hold 10 waiting polls: the 11th is 429 with Retry-After: 1, another caller still waits', async () => {
    const name = slug('long-poll-flood');
    const flood = await token(name);
    const id = await parkedRun(name);
    // Twelve at once: whichever come last, two are refused at once and ten wait.
    const clients = Array.from({ length: 12 }, () => new AbortController());
    const settled: Answer[] = [];
    const answers = clients.map((client) => abandonable(id, flood, client).then((a) => (settled.push(a), a)));
    await eventually(() => (settled.length >= 2 ? true : undefined), 15_000, 'two polls refused');
    expect(settled).toEqual([
      { status: 429, retryAfter: '1', body: { error: expect.any(String), code: 429 } },
      { status: 429, retryAfter: '1', body: { error: expect.any(String), code: 429 } },
    ]);

    // Another principal still gets its poll; polls that need no wait are answered too.
    const other = await api(`/api/events/${id}?start=100&wait=1`, { token: admin });
    expect(other.status, other.text).toBe(200);
    expect(other.body).toEqual([]);
    expect((await api(`/api/events/${id}?start=100`, { token: flood })).status).toBe(200);
    const there = await api(`/api/events/${id}?start=0&wait=20`, { token: flood });
    expect(there.status).toBe(200);
    expect(there.body.length).toBeGreaterThan(0);
    expect(settled).toHaveLength(2);

    // The ten clients go away: their places are given back long before their 20 s are up.
    for (const client of clients) client.abort();
    expect((await Promise.all(answers)).filter((a) => a === 'abandoned')).toHaveLength(10);
    const again = await eventually(
      async () => {
        const res = await api(`/api/events/${id}?start=100&wait=1`, { token: flood });
        return res.status === 200 ? res : undefined;
      },
      10_000,
      'a waiting poll accepted again',
    );
    expect(again.body).toEqual([]);
  });

  it('gives the places back once the polls are answered: the caller may wait ten times again', async () => {
    const name = slug('long-poll-again');
    const caller = await token(name);
    const id = await parkedRun(name);
    for (let round = 0; round < 2; round++) {
      const polls = await Promise.all(Array.from({ length: 10 }, () => longPoll(id, 100, 1, caller)));
      for (const { res } of polls) {
        expect(res.status, res.text).toBe(200);
        expect(res.body).toEqual([]);
      }
    }
  });
});
