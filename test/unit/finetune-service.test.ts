import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { FinetuneJob } from '../../functions/finetune/schemas.js';
import { FinetuneService, type JobArtifacts, type SourceDocuments } from '../../functions/finetune/service.js';
import type { FinetuneJobStore, StoredJob } from '../../functions/finetune/store.js';
import { Conflict, Forbidden, NotFound, Unavailable } from '../../shared/errors.js';
import type { Change } from '../../shared/events/types.js';
import { rejection } from '../support/rejection.js';
import { adminCaller, invalidIssues, principalOf, userCaller } from './fakes.js';

/**
 * Fine-tuning datasets (docs/data-and-catalog.md, E11) over an in-memory job table, artifact store and
 * documents: source documents checked (422, then 403) before anything is written, the
 * manifest before the job, artifacts before the record on E11, ownership by principal.
 */

const AT = '2026-11-21T10:00:00.000Z';
const DOC_CAROL = 'aaaaaaaa-0000-4000-8000-000000000001';
const DOC_BOB = 'aaaaaaaa-0000-4000-8000-000000000002';
const DOC_LEGACY = 'aaaaaaaa-0000-4000-8000-000000000003';
const DOC_MISSING = 'aaaaaaaa-0000-4000-8000-000000000009';

function world() {
  /** Everything written, in order: manifests, artifacts removed, jobs. */
  const log: string[] = [];
  const jobs = new Map<string, StoredJob>();
  const changes: { id: string; change: Change; data?: FinetuneJob }[] = [];
  const lists: { owner?: string; limit: number; cursor: string | undefined }[] = [];
  const store: FinetuneJobStore = {
    create: async (job, ownerPrincipal, change) => {
      log.push(`job ${job.id}`);
      jobs.set(job.id, { job, ownerPrincipal, seq: 1 });
      changes.push({ id: job.id, change });
    },
    get: async (id) => jobs.get(id),
    listOwned: async (owner, limit, cursor) => {
      lists.push({ owner, limit, cursor });
      return { items: [...jobs.values()].filter((j) => j.ownerPrincipal === owner).map((j) => j.job), nextCursor: 'n' };
    },
    listAll: async (limit, cursor) => {
      lists.push({ limit, cursor });
      return { items: [...jobs.values()].map((j) => j.job), nextCursor: undefined };
    },
    delete: async (stored, change) => {
      log.push(`delete ${stored.job.id}`);
      const current = jobs.get(stored.job.id);
      if (!current || current.seq !== stored.seq) return false;
      jobs.delete(stored.job.id);
      changes.push({ id: stored.job.id, change, data: stored.job });
      return true;
    },
  };
  const artifacts: JobArtifacts = {
    writeManifest: async (job) => void log.push(`manifest ${job.id}`),
    deleteAll: async (jobId) => {
      log.push(`artifacts ${jobId}`);
      return 1;
    },
  };
  const ownerReads: string[][] = [];
  const documents: SourceDocuments = {
    ownersOf: async (ids) => {
      ownerReads.push([...ids]);
      const owners = new Map([
        [DOC_CAROL, principalOf('carol')],
        [DOC_BOB, principalOf('bob')],
        [DOC_LEGACY, ''],
      ]);
      return new Map(ids.flatMap((id) => (owners.has(id) ? [[id, owners.get(id)!] as const] : [])));
    },
  };
  return {
    store,
    artifacts,
    documents,
    log,
    jobs,
    changes,
    lists,
    ownerReads,
    service: new FinetuneService(store, artifacts, documents),
  };
}

const request = (source_documents: string[] = []) => ({
  name: 'support answers',
  source_documents,
  format: 'jsonl' as const,
});

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(Date.parse(AT));
});
afterEach(() => {
  vi.useRealTimers();
});

describe('FinetuneService.create', () => {
  it('writes the manifest, then the pending job owned by the caller’s principal, and records it', async () => {
    const w = world();
    const job = await w.service.create(request([DOC_CAROL]), userCaller('carol'));
    expect(job).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'support answers',
      owner: 'carol',
      status: 'pending',
      format: 'jsonl',
      source_documents: [DOC_CAROL],
      created_at: AT,
    });
    expect(w.log).toEqual([`manifest ${job.id}`, `job ${job.id}`]);
    expect(w.jobs.get(job.id)?.ownerPrincipal).toBe(principalOf('carol'));
    expect(w.changes).toEqual([{ id: job.id, change: { type: 'finetune.dataset.created', actor: 'carol', at: AT } }]);
  });

  it('lists every missing source document in one 422, at its index, writing nothing', async () => {
    const w = world();
    const issues = await invalidIssues(
      w.service.create(request([DOC_MISSING, DOC_CAROL, 'x-missing']), userCaller('carol')),
    );
    expect(issues).toEqual([
      {
        type: 'value_error',
        loc: ['body', 'source_documents', 0],
        msg: `Value error, no document ${DOC_MISSING}`,
        input: DOC_MISSING,
        ctx: { error: `no document ${DOC_MISSING}` },
      },
      {
        type: 'value_error',
        loc: ['body', 'source_documents', 2],
        msg: 'Value error, no document x-missing',
        input: 'x-missing',
        ctx: { error: 'no document x-missing' },
      },
    ]);
    expect(w.log).toEqual([]);
  });

  it("refuses another's document (403) after the 422 check; an admin may name any", async () => {
    const w = world();
    // Missing and foreign together: the 422 comes first.
    expect(await invalidIssues(w.service.create(request([DOC_BOB, DOC_MISSING]), userCaller('carol')))).toHaveLength(1);
    const refused = await rejection(w.service.create(request([DOC_CAROL, DOC_BOB]), userCaller('carol')));
    expect(refused).toBeInstanceOf(Forbidden);
    expect(refused.message).toBe(`Document ${DOC_BOB} is not yours: a dataset may draw only on your own documents`);
    // Another subject showing carol's name does not own carol's document; nor does anyone own one stored without a principal.
    expect(
      await rejection(w.service.create(request([DOC_CAROL]), userCaller('carol', { subject: 'x' }))),
    ).toBeInstanceOf(Forbidden);
    expect(await rejection(w.service.create(request([DOC_LEGACY]), userCaller('carol')))).toBeInstanceOf(Forbidden);
    expect(w.log).toEqual([]);
    const job = await w.service.create(request([DOC_CAROL, DOC_BOB, DOC_LEGACY]), adminCaller());
    expect(job.source_documents).toEqual([DOC_CAROL, DOC_BOB, DOC_LEGACY]);
  });

  it('reads no documents for a dataset without sources', async () => {
    const w = world();
    await w.service.create(request(), userCaller('carol'));
    expect(w.ownerReads).toEqual([]);
  });

  it('removes the manifest again when the job cannot be stored', async () => {
    const w = world();
    const service = new FinetuneService(
      {
        ...w.store,
        create: async () => {
          throw new Unavailable();
        },
      },
      w.artifacts,
      w.documents,
    );
    expect(await rejection(service.create(request(), userCaller('carol')))).toBeInstanceOf(Unavailable);
    expect(w.log).toHaveLength(2);
    const id = w.log[0]!.split(' ')[1]!;
    expect(w.log).toEqual([`manifest ${id}`, `artifacts ${id}`]);
  });
});

describe('FinetuneService reads', () => {
  it("lists a user's own jobs by principal and an admin's all, passing the cursor on", async () => {
    const w = world();
    await w.service.create(request(), userCaller('carol'));
    await w.service.create(request(), userCaller('bob'));
    expect((await w.service.list(userCaller('carol'), 10, 'c1')).items.map((j) => j.owner)).toEqual(['carol']);
    expect((await w.service.list(adminCaller(), 20, undefined)).items).toHaveLength(2);
    expect(w.lists).toEqual([
      { owner: principalOf('carol'), limit: 10, cursor: 'c1' },
      { limit: 20, cursor: undefined },
    ]);
  });

  it('answers the owner and admins; 403 for another subject of the same name; 404 unknown', async () => {
    const w = world();
    const job = await w.service.create(request(), userCaller('carol'));
    expect(await w.service.get(job.id, userCaller('carol'))).toEqual(job);
    expect(await w.service.get(job.id, adminCaller())).toEqual(job);
    const refused = await rejection(w.service.get(job.id, userCaller('carol', { subject: 'other' })));
    expect(refused).toBeInstanceOf(Forbidden);
    expect(refused.message).toBe("Only the job's owner or an admin may access it");
    expect(await rejection(w.service.get('nope', adminCaller()))).toBeInstanceOf(NotFound);
  });
});

describe('FinetuneService.delete (E11)', () => {
  it('removes the artifacts, then the job with its event (the job as it was)', async () => {
    const w = world();
    const job = await w.service.create(request(), userCaller('carol'));
    w.log.length = 0;
    w.changes.length = 0;
    expect(await w.service.delete(job.id, userCaller('carol'))).toEqual({ id: job.id, deleted: true });
    expect(w.log).toEqual([`artifacts ${job.id}`, `delete ${job.id}`]);
    expect(w.changes).toEqual([
      { id: job.id, change: { type: 'finetune.dataset.deleted', actor: 'carol', at: AT }, data: job },
    ]);
  });

  it('refuses a non-owner (403) and an unknown job (404) before touching the artifacts', async () => {
    const w = world();
    const job = await w.service.create(request(), userCaller('carol'));
    w.log.length = 0;
    expect(await rejection(w.service.delete(job.id, userCaller('bob')))).toBeInstanceOf(Forbidden);
    expect(await rejection(w.service.delete('nope', userCaller('bob')))).toBeInstanceOf(NotFound);
    expect(w.log).toEqual([]);
    expect((await w.service.delete(job.id, adminCaller())).deleted).toBe(true);
  });

  it('keeps the job when the artifact store fails, so a retry can finish', async () => {
    const w = world();
    const job = await w.service.create(request(), userCaller('carol'));
    const service = new FinetuneService(
      w.store,
      {
        ...w.artifacts,
        deleteAll: async () => {
          throw new Unavailable('The artifact store did not delete every object of the job');
        },
      },
      w.documents,
    );
    expect(await rejection(service.delete(job.id, userCaller('carol')))).toBeInstanceOf(Unavailable);
    expect(w.jobs.has(job.id)).toBe(true);
    expect((await w.service.delete(job.id, userCaller('carol'))).deleted).toBe(true);
  });

  it('reads a job changed meanwhile again; one deleted meanwhile is 404; one that keeps changing 409', async () => {
    const changed = world();
    const job = await changed.service.create(request(), userCaller('carol'));
    const remove = changed.store.delete;
    let raced = false;
    changed.store.delete = async (stored, change) => {
      if (!raced) {
        raced = true;
        changed.jobs.set(job.id, { ...stored, seq: 2 });
      }
      return remove(stored, change);
    };
    expect((await changed.service.delete(job.id, userCaller('carol'))).deleted).toBe(true);
    expect(changed.changes.at(-1)?.change.type).toBe('finetune.dataset.deleted');

    const gone = world();
    const other = await gone.service.create(request(), userCaller('carol'));
    gone.store.delete = async () => {
      gone.jobs.delete(other.id);
      return false;
    };
    expect(await rejection(gone.service.delete(other.id, userCaller('carol')))).toBeInstanceOf(NotFound);

    const busy = world();
    const third = await busy.service.create(request(), userCaller('carol'));
    let attempts = 0;
    busy.store.delete = async () => {
      attempts++;
      return false;
    };
    expect(await rejection(busy.service.delete(third.id, userCaller('carol')))).toBeInstanceOf(Conflict);
    expect(attempts).toBe(5);
  });
});
