import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { DataShareService } from '../../../functions/data-shares/service.js';
import { DynamoDataShareStore } from '../../../functions/data-shares/store.js';
import { emulatorOptions } from '../../../shared/aws/client-options.js';
import type { IdentityProvider } from '../../../shared/ports/idp.js';
import { eventsBefore, eventsOf as feedEvents } from '../event-feed.js';
import { adminPsk, adminToken, api, db, eventsTable, principalOf, slug, table, token } from '../helpers.js';
import { provided } from '../provided.js';

// docs/sdk.md: GET and DELETE /api/data_shares/{share_id} take the share's `id` as well as its
// name. An id is a lowercase UUID, which also has the shape of a name: such a key is read as
// an id, new names of that shape are refused, and a share named so earlier is still found by
// its name when no share has that id.

interface Share {
  id: string;
  client_id: string;
  name: string;
  secret: string | null;
  owner: string;
}

let admin: string;
let feedReader: string;
const ownerName = `share-id-owner-${randomUUID().slice(0, 8)}`;
let owner: string;
let other: string;
/** Makes the change that marks the end of what a test checks (event-feed.ts eventsBefore). */
let marker: string;
const MARKER = `share-id-marker-${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  marker = await token(MARKER);
  admin = await adminToken('share-id-admin');
  feedReader = await adminToken('share-id-reader');
  owner = await token(ownerName);
  other = await token('share-id-other');
});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const create = (body: unknown, t = owner) => api<Share>('/api/data_shares', { method: 'POST', token: t, body });
const read = (key: string, t = owner) => api<Share>(`/api/data_shares/${key}`, { token: t });
const remove = (key: string, t = owner) => api(`/api/data_shares/${key}`, { method: 'DELETE', token: t });
const locTypes = (body: { detail: { loc: unknown[]; type: string }[] }) => body.detail.map((d) => [d.loc, d.type]);

async function createShare(): Promise<Share> {
  const res = await create({ name: slug('byid') });
  expect(res.status, res.text).toBe(201);
  expect(res.body.id).toMatch(UUID);
  return res.body;
}

/**
 * A share stored as one created before ids were accepted could be: its name shaped like a
 * UUID. Made through the store (reservation, then completion with its event), as creation
 * does, since the API now refuses such names.
 */
async function legacyShare(name: string, idpId: string): Promise<void> {
  const store = new DynamoDataShareStore(db(), table('dataShares'), eventsTable());
  const createdAt = new Date().toISOString();
  const share = {
    name,
    owner: ownerName,
    owner_principal: principalOf(ownerName),
    description: null,
    tables: [],
    created_at: createdAt,
    client_id: name,
  };
  expect(await store.reserve(share, 'legacy', '2000-01-01T00:00:00.000Z')).toBe(true);
  const done = await store.complete(
    name,
    'legacy',
    { idp_id: idpId, enabled: true, service_accounts_enabled: true },
    { type: 'data_share.created', actor: ownerName, at: createdAt },
  );
  expect(done?.idp_id).toBe(idpId);
}

describe('data shares by id (§17)', () => {
  it('GET answers the same share by its id and by its name, to the owner and to admins', async () => {
    const share = await createShare();
    const byName = await read(share.name);
    const byId = await read(share.id);
    expect(byName.status, byName.text).toBe(200);
    expect(byId.status, byId.text).toBe(200);
    expect(byId.body).toEqual(byName.body);
    expect(byId.body).toEqual(share);
    expect((await read(share.id, admin)).body).toEqual(share);
    const viaPsk = await api<Share>(`/api/data_shares/${share.id}`, { psk: adminPsk() });
    expect(viaPsk.status).toBe(200);
    expect(viaPsk.body.secret).toBe(share.secret);
  });

  it('refuses others by id as by name (403, no secret), and anonymous callers (401)', async () => {
    const share = await createShare();
    for (const key of [share.id, share.name]) {
      const got = await read(key, other);
      expect(got.status).toBe(403);
      expect(got.body).toEqual({ error: expect.any(String), code: 403 });
      expect(got.text).not.toContain(share.secret!);
      expect((await remove(key, other)).status).toBe(403);
      expect((await api(`/api/data_shares/${key}`)).status).toBe(401);
      expect((await api(`/api/data_shares/${key}`, { method: 'DELETE' })).status).toBe(401);
    }
    expect((await read(share.name)).status).toBe(200);
  });

  it('DELETE by id removes the share (204) with its data_share.deleted event under the name', async () => {
    const share = await createShare();
    expect((await remove(share.id)).status).toBe(204);
    for (const key of [share.id, share.name]) {
      const gone = await read(key);
      expect(gone.status).toBe(404);
      expect(gone.body).toEqual({ error: expect.any(String), code: 404 });
      expect((await remove(key)).status).toBe(404);
    }
    const subject = `data-shares/${share.name}`;
    // The marker: the name used again, whose subject goes on counting; an event of a refused
    // deletion above would come before its creation's.
    expect((await create({ name: share.name }, marker)).status).toBe(201);
    const { before: events, marker: created } = await eventsBefore(subject, (e) => e.actor === MARKER, feedReader);
    expect(created.type).toBe('dpm.data_share.created');
    expect(events.map((e) => [e.type, e.sequence, e.actor])).toEqual([
      ['dpm.data_share.created', 1, ownerName],
      ['dpm.data_share.deleted', 2, ownerName],
    ]);
    expect(events[1]!.data).toMatchObject({ id: share.id, name: share.name, secret: null });
    expect(JSON.stringify(events)).not.toContain(share.secret!);
  });

  it('an admin deletes by id; a refused deletion by id records no event', async () => {
    const share = await createShare();
    expect((await remove(share.id, other)).status).toBe(403);
    expect((await remove(share.id, admin)).status).toBe(204);
    // The deletion is the marker: an event of the refused deletion before it would have taken its sequence.
    const events = await feedEvents(`data-shares/${share.name}`, 2, feedReader);
    expect(events.map((e) => [e.type, e.sequence, e.actor])).toEqual([
      ['dpm.data_share.created', 1, ownerName],
      ['dpm.data_share.deleted', 2, 'share-id-admin'],
    ]);
  });

  it('answers 404 for an id no share has, and 422 for a key that is neither a name nor an id', async () => {
    const unknown = randomUUID();
    expect((await read(unknown)).status).toBe(404);
    expect((await remove(unknown)).status).toBe(404);
    // Ids are lowercase, as names are: an uppercase UUID is neither.
    const upper = await api(`/api/data_shares/${randomUUID().toUpperCase()}`, { token: owner });
    expect(upper.status).toBe(422);
    expect(locTypes(upper.body)).toEqual([[['path', 'share_id'], 'string_pattern_mismatch']]);
  });

  it('refuses a new name shaped like an id (422 value_error at body.name)', async () => {
    const res = await api('/api/data_shares', { method: 'POST', token: owner, body: { name: randomUUID() } });
    expect(res.status).toBe(422);
    expect(locTypes(res.body)).toEqual([[['body', 'name'], 'value_error']]);
    expect(res.body.detail[0].ctx).toEqual({ error: expect.stringContaining('UUID') });
    // Names that merely contain hex and dashes are still names.
    const fine = await create({ name: `${randomUUID().slice(0, 8)}-share` });
    expect(fine.status, fine.text).toBe(201);
  });

  it("never confuses a name and an id: an id wins, and an earlier UUID-shaped name is found when it is no one's id", async () => {
    const real = await createShare();
    // An earlier share named exactly like the real share's id, with an id of its own.
    const shadowId = randomUUID();
    await legacyShare(real.id, shadowId);
    const byRealId = await read(real.id, admin);
    expect(byRealId.status).toBe(200);
    expect(byRealId.body).toMatchObject({ name: real.name, id: real.id });
    const byShadowId = await read(shadowId, admin);
    expect(byShadowId.status).toBe(200);
    expect(byShadowId.body).toMatchObject({ name: real.id, id: shadowId });

    // An earlier UUID-shaped name that is no share's id: found by that name.
    const loneName = randomUUID();
    const loneId = randomUUID();
    await legacyShare(loneName, loneId);
    const lone = await read(loneName);
    expect(lone.status).toBe(200);
    expect(lone.body).toMatchObject({ name: loneName, id: loneId });
    expect((await read(loneId)).body).toMatchObject({ name: loneName, id: loneId });

    // Deleting by the real id deletes the real share, never its namesake.
    expect((await remove(real.id, admin)).status).toBe(204);
    expect((await read(real.name, admin)).status).toBe(404);
    const namesake = await read(real.id, admin);
    expect(namesake.status).toBe(200);
    expect(namesake.body).toMatchObject({ name: real.id, id: shadowId });
    expect((await remove(shadowId, admin)).status).toBe(204);
    expect((await remove(loneName, admin)).status).toBe(204);
    expect((await read(loneId, admin)).status).toBe(404);
  });

  it('finds a share by id with one Query on by_idp_id (one item read) and one GetItem, never a Scan', async () => {
    const share = await createShare();
    const counted = DynamoDBDocumentClient.from(
      new DynamoDBClient(emulatorOptions({ region: 'us-east-1', endpoint: provided('dynamodbEndpoint') })),
    );
    const calls: { command: string | undefined; index?: string; scanned?: number }[] = [];
    counted.middlewareStack.add(
      (next, context) => async (args) => {
        const out = await next(args);
        calls.push({
          command: context.commandName,
          index: (args.input as { IndexName?: string }).IndexName,
          scanned: (out.output as { ScannedCount?: number }).ScannedCount,
        });
        return out;
      },
      { step: 'initialize', name: 'callCounter' },
    );
    const idp: IdentityProvider = {
      createClient: () => Promise.reject(new Error('not used')),
      getClient: () => Promise.resolve(undefined),
      regenerateSecret: () => Promise.resolve(undefined),
      deleteClient: () => Promise.resolve(false),
    };
    const service = new DataShareService(new DynamoDataShareStore(counted, table('dataShares'), eventsTable()), idp);
    const caller = {
      principal: principalOf(ownerName),
      name: ownerName,
      roles: new Set<string>(),
      via: 'bearer' as const,
    };
    const got = await service.get(share.id, caller);
    expect(got).toMatchObject({ id: share.id, name: share.name });
    expect(calls).toEqual([
      { command: 'QueryCommand', index: 'by_idp_id', scanned: 1 },
      { command: 'GetItemCommand', index: undefined, scanned: undefined },
    ]);
    // By name: the GetItem alone.
    calls.length = 0;
    await service.get(share.name, caller);
    expect(calls.map((c) => c.command)).toEqual(['GetItemCommand']);
  });
});
