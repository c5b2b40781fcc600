import { beforeAll, describe, expect, it } from 'vitest';
import { finishedRun, listedRuns, startRun } from '../crew-support.js';
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

const start = (as: string): Promise<string> => startRun(templateId, as);

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
  for (const id of adminRuns) await finishedRun<Run>(id, admin);
  await finishedRun<Run>(aliceRun, alice);
});

describe('GET /api/crew-runs?created_by=me', () => {
  it("answers an admin their own runs only; without it, everyone's", async () => {
    const own = await listedRuns<Run>(`template_id=${templateId}&created_by=me`, admin);
    expect(own.map((r) => r.correlation_id)).toEqual([...adminRuns].reverse());
    for (const r of own) expect(r.created_by).toBe(adminName);
    const everyone = (await listedRuns<Run>(`template_id=${templateId}`, admin)).map((r) => r.correlation_id);
    expect(everyone).toEqual([aliceRun, ...[...adminRuns].reverse()]);
  });

  it('combines with the status filter and pages by cursor', async () => {
    const paged = await listedRuns<Run>(`template_id=${templateId}&created_by=me&status=succeeded&limit=1`, admin);
    expect(paged.map((r) => r.correlation_id)).toEqual([...adminRuns].reverse());
    expect(await listedRuns<Run>(`template_id=${templateId}&created_by=me&status=failed`, admin)).toEqual([]);
  });

  it('changes nothing for a user: their own runs, with or without it', async () => {
    expect(
      (await listedRuns<Run>(`template_id=${templateId}&created_by=me`, alice)).map((r) => r.correlation_id),
    ).toEqual([aliceRun]);
    expect((await listedRuns<Run>(`template_id=${templateId}`, alice)).map((r) => r.correlation_id)).toEqual([
      aliceRun,
    ]);
  });

  it('takes only `me`, with the field at fault', async () => {
    for (const value of [aliceName, '', 'ME']) {
      const res = await api(`/api/crew-runs?created_by=${encodeURIComponent(value)}`, { token: admin });
      expect(res.status, value).toBe(422);
      expect(res.body.detail[0], value).toMatchObject({ loc: ['query', 'created_by'] });
    }
  });
});
