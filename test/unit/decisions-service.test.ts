import { describe, expect, it } from 'vitest';
import { type Caller, tokenPrincipal } from '../../shared/auth/caller.js';
import { Conflict, Forbidden, Invalid, NotFound } from '../../shared/errors.js';
import { statusOf } from '../../shared/http/errors.js';
import { DecisionService, MAX_CONTENT_BYTES } from '../../functions/decisions/service.js';
import type { DecisionStore, TransitionResult, TransitionWrite, VersionItem } from '../../functions/decisions/store.js';
import { rejection } from '../support/rejection.js';

const principal = (name: string) => tokenPrincipal('https://issuer.test', `sub-${name}`);
const caller = (name: string, roles: string[] = []): Caller => ({
  principal: principal(name),
  name,
  roles: new Set(roles),
  via: 'bearer',
});

const item = (over: Partial<VersionItem> = {}): VersionItem => ({
  workspace: 'ws',
  key: 'k',
  version: 1,
  content_sha: 'x',
  status: 'submitted',
  notes: null,
  created_by: 'alice',
  created_by_principal: principal('alice'),
  created_at: '2026-01-01T00:00:00.000Z',
  submitted_by: 'bob',
  submitted_by_principal: principal('bob'),
  submitted_at: '2026-01-01T00:00:01.000Z',
  approved_by: null,
  approved_at: null,
  source_instance: null,
  source_version: null,
  content: {},
  history: [],
  ...over,
});

/** A store fake that records the writes it is asked for and answers a preset result. */
function fakeStore(result: TransitionResult) {
  const writes: TransitionWrite[] = [];
  const created: VersionItem[] = [];
  let counter = 0;
  const unused = () => Promise.reject(new Error('not used by these tests'));
  const store: DecisionStore = {
    transition: async (_w, _k, _v, t) => {
      writes.push(t);
      return result;
    },
    nextVersion: async () => ({ version: ++counter }),
    submittedAfter: unused,
    create: async (i) => {
      created.push(i);
    },
    get: unused,
    list: unused,
    listDecisions: unused,
    newestPublished: unused,
    getUnparsed: unused,
  };
  return { store, writes, created };
}

describe('DecisionService.transition', () => {
  it('asks for one conditional write with the four-eyes conditions on approve', async () => {
    const { store, writes } = fakeStore({ ok: true, item: item({ status: 'approved', approved_by: 'carol' }) });
    const out = await new DecisionService(store).transition('approve', 'ws', 'k', 1, 'fine', caller('carol'));
    expect(out.status).toBe('approved');
    expect(writes).toHaveLength(1);
    expect(writes[0]).toMatchObject({
      from: 'submitted',
      to: 'approved',
      differentFrom: { created_by_principal: principal('carol'), submitted_by_principal: principal('carol') },
      published: true,
      set: { approved_by: 'carol', approved_by_principal: principal('carol'), notes: 'fine' },
      history: { action: 'approve', by: 'carol', notes: 'fine' },
    });
  });

  it('clears the submitter on reject and unpublishes on retire, with no four-eyes condition', async () => {
    const reject = fakeStore({ ok: true, item: item({ status: 'draft' }) });
    await new DecisionService(reject.store).transition('reject', 'ws', 'k', 1, undefined, caller('carol'));
    expect(reject.writes[0]).toMatchObject({
      from: 'submitted',
      to: 'draft',
      remove: ['submitted_by', 'submitted_by_principal', 'submitted_at'],
    });
    expect(reject.writes[0]!.differentFrom).toBeUndefined();
    const retire = fakeStore({ ok: true, item: item({ status: 'retired' }) });
    await new DecisionService(retire.store).transition('retire', 'ws', 'k', 1, null, caller('carol'));
    expect(retire.writes[0]).toMatchObject({ from: 'approved', to: 'retired', published: false });
  });

  it('explains a refused write: missing → 404, wrong state → 409, else the four-eyes 403', async () => {
    const run = (current: VersionItem | undefined) =>
      new DecisionService(fakeStore({ ok: false, current }).store).transition(
        'approve',
        'ws',
        'k',
        1,
        null,
        caller('alice'),
      );
    await expect(run(undefined)).rejects.toBeInstanceOf(NotFound);
    await expect(run(item({ status: 'draft', created_by: 'alice' }))).rejects.toBeInstanceOf(Conflict);
    await expect(run(item({ status: 'approved' }))).rejects.toBeInstanceOf(Conflict);
    await expect(
      run(item({ status: 'submitted', created_by: 'Alice', created_by_principal: principal('alice') })),
    ).rejects.toBeInstanceOf(Forbidden);
    // A version recorded by name only cannot be told apart from the caller: refused.
    const legacy = item({ status: 'submitted', created_by: 'zoe', submitted_by: 'yan' });
    delete legacy.created_by_principal;
    const refused = await rejection(run(legacy));
    expect(statusOf(refused)).toBe(403);
    expect(refused.message).toMatch(/before principals/);
  });

  it('compares principals, never names: another subject of the same name may approve', async () => {
    const { store, writes } = fakeStore({ ok: true, item: item({ status: 'approved' }) });
    const namesake: Caller = { ...caller('alice'), principal: tokenPrincipal('https://issuer.test', 'someone-else') };
    await new DecisionService(store).transition('approve', 'ws', 'k', 1, null, namesake);
    expect(writes[0]!.differentFrom).toEqual({
      created_by_principal: namesake.principal,
      submitted_by_principal: namesake.principal,
    });
  });
});

describe('DecisionService.createVersion', () => {
  it('hashes canonical content and starts the history with the creation', async () => {
    const { store, created } = fakeStore({ ok: false, current: undefined });
    const out = await new DecisionService(store).createVersion('ws', 'k', { content: { b: 1, a: 2 } }, caller('alice'));
    expect(out).toMatchObject({ version: 1, status: 'draft', created_by: 'alice', notes: null });
    // sha256('{"a":2,"b":1}'): keys sorted, no whitespace
    expect(out.content_sha).toBe('d3626ac30a87e6f7a6428233b3c68299976865fa5508e4267c5415c76af7a772');
    const again = await new DecisionService(store).createVersion('ws', 'k', { content: { a: 2, b: 1 } }, caller('bob'));
    expect(again.content_sha).toBe(out.content_sha);
    expect(created[0]!.history).toEqual([
      expect.objectContaining({ action: 'create', from: null, to: 'draft', by: 'alice' }),
    ]);
  });

  it('refuses content too large for one item before reserving a version number', async () => {
    const { store, created } = fakeStore({ ok: false, current: undefined });
    const big = 'x'.repeat(MAX_CONTENT_BYTES);
    await expect(
      new DecisionService(store).createVersion('ws', 'k', { content: big }, caller('alice')),
    ).rejects.toBeInstanceOf(Invalid);
    expect(created).toHaveLength(0);
  });
});
