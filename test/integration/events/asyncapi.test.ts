import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { EVENT_CATALOG } from '../../../functions/domain-events/catalog.js';
import { DomainEventSchema } from '../../../functions/domain-events/schemas.js';
import type { DomainEventType } from '../../../shared/events/types.js';
import { eventsOf as feedEvents } from '../event-feed.js';
import { adminToken, api, slug } from '../helpers.js';
import { provided } from '../provided.js';

/**
 * GET /asyncapi.json (the API conventions, docs/events-and-webhooks.md): open to anyone, the generated document with the
 * serving stage filled in, linked from /docs; and what it says of `data` holds for the
 * events the service really records.
 */

type Json = Record<string, any>;
const ASYNCAPI_FILE = new URL('../../../functions/platform/asyncapi.json', import.meta.url);
type Envelope = z.infer<typeof DomainEventSchema>;

let admin: string;

beforeAll(async () => {
  admin = await adminToken('asyncapi-admin');
});

describe('GET /asyncapi.json', () => {
  it('answers the AsyncAPI 3.0 document as JSON without credentials', async () => {
    const res = await api<Json>('/asyncapi.json');
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.body.asyncapi).toBe('3.0.0');
    expect(Object.keys(res.body.components.messages)).toContain('decision.version.approved');
  });

  it('is the committed document, its EventBridge server defaulting to the serving stage’s bus', async () => {
    const served = (await api<Json>('/asyncapi.json')).body;
    const { variables } = served.servers.eventbridge;
    expect(variables.stage.default).toBe(provided('stage'));
    expect(variables.region.default).toEqual(expect.any(String));
    delete variables.stage.default;
    delete variables.region.default;
    expect(served).toEqual(JSON.parse(readFileSync(ASYNCAPI_FILE, 'utf8')));
  });

  it('is open whatever credentials come along, and takes GET only', async () => {
    expect((await api('/asyncapi.json', { psk: 'not-a-key' })).status).toBe(200);
    expect((await api('/asyncapi.json', { token: 'garbage' })).status).toBe(200);
    const post = await api('/asyncapi.json', { method: 'POST', body: {} });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toMatch(/GET/);
  });

  it('is linked from /docs', async () => {
    const page = await api('/docs');
    expect(page.status).toBe(200);
    expect(page.text).toMatch(/<a [^>]*href="\/asyncapi\.json"[^>]*>[^<]*AsyncAPI/);
  });
});

/** The subject's events once `count` are there (they arrive through the tables' streams). */
const eventsOf = async (subject: string, count: number): Promise<Envelope[]> =>
  (await feedEvents(subject, count, admin, { deadlineMs: 10_000 })) as Envelope[];

/** Why `event` is not what the document says of its type, or undefined when it is. */
function mismatch(event: Envelope): string | undefined {
  const envelope = z.safeParse(DomainEventSchema, event);
  if (!envelope.success) return `${event.type} ${event.id}: envelope ${JSON.stringify(envelope.error.issues)}`;
  const type = event.type.replace(/^dpm\./, '') as DomainEventType;
  if (!Object.hasOwn(EVENT_CATALOG, type)) return `${event.type}: not in /asyncapi.json`;
  const data = z.safeParse(EVENT_CATALOG[type].data, event.data);
  if (!data.success) return `${event.type} ${event.id}: data ${JSON.stringify(data.error.issues)}`;
  return undefined;
}

describe('the events the service records', () => {
  it('carry the data /asyncapi.json documents for their type', async () => {
    const ws = slug('ws');
    const key = slug('key');
    const base = `/api/decisions/${ws}/${key}/versions`;
    const created = await api(base, { method: 'POST', token: admin, body: { content: { limit: 1 } } });
    expect(created.status, created.text).toBe(201);
    expect((await api(`${base}/1/submit`, { method: 'POST', token: admin })).status).toBe(200);
    const template = await api('/api/crew-templates', {
      method: 'POST',
      token: admin,
      body: {
        name: slug('asyncapi'),
        variables: [{ name: 'who', required: true }],
        steps: [{ id: 'a', kind: 'render', template: 'hi {{who}}' }],
      },
    });
    expect(template.status, template.text).toBe(201);
    const run = await api(`/api/crew-templates/${template.body.id}/run`, {
      method: 'POST',
      token: admin,
      body: { values: { who: 'events' } },
    });
    expect(run.status, run.text).toBe(202);
    expect((await api(`/api/crew-templates/${template.body.id}`, { method: 'DELETE', token: admin })).status).toBe(204);

    const decision = await eventsOf(`decisions/${ws}/${key}/versions/1`, 2);
    const templates = await eventsOf(`crew-templates/${template.body.id}`, 2);
    const runs = await eventsOf(`crew-runs/${run.body.correlation_id}`, 1);
    expect(decision.map((e) => e.type)).toEqual(['dpm.decision.version.created', 'dpm.decision.version.submitted']);
    expect(templates.map((e) => e.type)).toEqual(['dpm.crew.template.created', 'dpm.crew.template.deleted']);
    expect(runs[0]?.type).toBe('dpm.crew.run.queued');
    const events = [...decision, ...templates, ...runs];
    expect(events.map(mismatch).filter(Boolean)).toEqual([]);
  });

  it('every event the feed holds (whatever the other suites did) is one the document describes', async () => {
    const problems: string[] = [];
    let path = '/api/domain-events?limit=1000';
    for (let page = 0; page < 10; page++) {
      const res = await api<Envelope[]>(path, { token: admin });
      expect(res.status).toBe(200);
      for (const event of res.body) {
        const problem = mismatch(event);
        if (problem) problems.push(problem);
      }
      const cursor = res.headers.get('x-next-cursor');
      if (!cursor) break;
      path = `/api/domain-events?limit=1000&cursor=${encodeURIComponent(cursor)}`;
    }
    expect(problems.slice(0, 20)).toEqual([]);
  });
});
