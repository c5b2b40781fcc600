import { beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/eventually.js';
import { adminToken, api, slug, token } from '../helpers.js';

/**
 * `GET /api/crew-runs?created_by=me` (docs/crews.md): an admin's own runs only (the review
 * console's "Started by: me" filter), read from the starters' index like a user's own list;
 * with the other filters and paged by cursor. A user's list is their own with or without it.
 */

type Run = { correlation_id: string; template_id: string; status: string; created_by: string };

let admin: string;
let adminName: string;
let alice: string;
let aliceName: string;
let templateId: string;
let adminRuns: string[];
let aliceRun: string;

const start = async (as: string): Promise<string> => {
  const res = await api(`/api/crew-templates/${templateId}/run`, { method: 'POST', token: as, body: { values: {} } });
  expect(res.status, res.text).toBe(202);
  return res.body.correlation_id as string;
};

const finished = (id: string, as: string) =>
  eventually(
    async () => {
      const res = await api<Run>(`/api/crew-runs/${id}`, { token: as });
      expect(res.status).toBe(200);
      return ['succeeded', 'failed'].includes(res.body.status) ? res.body : undefined;
    },
    20_000,
    `run ${id} finished`,
  );

/** Every run of a list, following X-Next-Cursor. */
async function all(query: string, as: string): Promise<Run[]> {
  const runs: Run[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const res: Awaited<ReturnType<typeof api<Run[]>>> = await api<Run[]>(
      `/api/crew-runs?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      { token: as },
    );
    expect(res.status, res.text).toBe(200);
    runs.push(...res.body);
    cursor = res.headers.get('x-next-cursor');
    pages++;
  } while (cursor && pages < 50);
  return runs;
}

beforeAll(async () => {
  adminName = slug('filter-admin');
  admin = await adminToken(adminName);
  aliceName = slug('filter-alice');
  alice = await token(aliceName);
  const res = await api('/api/crew-templates', {
    method: 'POST',
    token: admin,
    body: { name: slug('runs-filter'), steps: [{ id: 'only', kind: 'render', template: 'x' }] },
  });
  expect(res.status, res.text).toBe(201);
  templateId = res.body.id as string;
  adminRuns = [await start(admin), await start(admin)];
  aliceRun = await start(alice);
  for (const id of adminRuns) await finished(id, admin);
  await finished(aliceRun, alice);
});

describe('GET /api/crew-runs?created_by=me', () => {
  it("answers an admin their own runs only; without it, everyone's", async () => {
    const own = await all(`template_id=${templateId}&created_by=me`, admin);
    expect(own.map((r) => r.correlation_id)).toEqual([...adminRuns].reverse());
    for (const r of own) expect(r.created_by).toBe(adminName);
    const everyone = (await all(`template_id=${templateId}`, admin)).map((r) => r.correlation_id);
    expect(everyone).toEqual([aliceRun, ...[...adminRuns].reverse()]);
  });

  it('combines with the status filter and pages by cursor', async () => {
    const paged = await all(`template_id=${templateId}&created_by=me&status=succeeded&limit=1`, admin);
    expect(paged.map((r) => r.correlation_id)).toEqual([...adminRuns].reverse());
    expect(await all(`template_id=${templateId}&created_by=me&status=failed`, admin)).toEqual([]);
  });

  it('changes nothing for a user: their own runs, with or without it', async () => {
    expect((await all(`template_id=${templateId}&created_by=me`, alice)).map((r) => r.correlation_id)).toEqual([
      aliceRun,
    ]);
    expect((await all(`template_id=${templateId}`, alice)).map((r) => r.correlation_id)).toEqual([aliceRun]);
  });

  it('takes only `me`, with the field at fault', async () => {
    for (const value of [aliceName, '', 'ME']) {
      const res = await api(`/api/crew-runs?created_by=${encodeURIComponent(value)}`, { token: admin });
      expect(res.status, value).toBe(422);
      expect(res.body.detail[0], value).toMatchObject({ loc: ['query', 'created_by'] });
    }
  });
});
