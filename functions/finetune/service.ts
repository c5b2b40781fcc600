import { randomUUID } from 'node:crypto';
import { type Caller, isAdmin, isPrincipal } from '../../shared/auth/caller.js';
import type { Page } from '../../shared/page.js';
import { type Clock, systemClock } from '../../shared/clock.js';
import { Conflict, Forbidden, Invalid, NotFound, type ValidationIssue, valueError } from '../../shared/errors.js';
import { logger } from '../../shared/logger.js';
import type { CreateDatasetRequest, FinetuneJob, JobDeleted } from './schemas.js';
import type { FinetuneJobStore, StoredJob } from './store.js';
import { AGAIN, retry } from '../../shared/retry.js';

/** Where a job's artifacts (its manifest, the built dataset) are kept. */
export interface JobArtifacts {
  writeManifest(job: FinetuneJob): Promise<void>;
  /** Removes every artifact of the job; removing none is fine. */
  deleteAll(jobId: string): Promise<number>;
}

/** Deletions that lose this many races in a row to concurrent changes of the job give up (409). */
const DELETE_ATTEMPTS = 5;

/** Who owns the documents a dataset draws on. */
export interface SourceDocuments {
  /** Owner principals of the documents among `ids` that exist ('' where none was recorded). */
  ownersOf(ids: readonly string[]): Promise<Map<string, string>>;
}

/** Fine-tuning dataset jobs (docs/data-and-catalog.md, E11). */
export class FinetuneService {
  constructor(
    private readonly jobs: FinetuneJobStore,
    private readonly artifacts: JobArtifacts,
    private readonly documents: SourceDocuments,
    /** The time the service reads: the system's unless given. */
    private readonly clock: Clock = systemClock,
  ) {}

  /** A new job; its source documents must exist and be the caller's (any, for an admin). */
  async create(req: CreateDatasetRequest, caller: Caller): Promise<FinetuneJob> {
    await this.checkSources(req.source_documents, caller);
    const job: FinetuneJob = {
      id: randomUUID(),
      name: req.name,
      owner: caller.name,
      status: 'pending',
      format: req.format,
      source_documents: req.source_documents,
      created_at: this.clock.iso(),
    };
    // The manifest first: a stored job always has one, and a failed write leaves no job.
    await this.artifacts.writeManifest(job);
    try {
      await this.jobs.create(job, caller.principal, {
        type: 'finetune.dataset.created',
        actor: caller.name,
        at: job.created_at,
      });
    } catch (err) {
      await this.artifacts
        .deleteAll(job.id)
        .catch((cleanup: unknown) => logger.warn('orphaned fine-tuning manifest', { job_id: job.id, error: cleanup }));
      throw err;
    }
    return job;
  }

  /** The caller's own jobs; an admin's list holds every job. Oldest first. */
  list(caller: Caller, limit: number, cursor: string | undefined): Promise<Page<FinetuneJob>> {
    return isAdmin(caller) ? this.jobs.listAll(limit, cursor) : this.jobs.listOwned(caller.principal, limit, cursor);
  }

  async get(id: string, caller: Caller): Promise<FinetuneJob> {
    return (await this.load(id, caller)).job;
  }

  private async load(id: string, caller: Caller): Promise<StoredJob> {
    const found = await this.jobs.get(id);
    if (!found) throw new NotFound(`No fine-tuning job ${id}`);
    if (!isPrincipal(found.ownerPrincipal, caller) && !isAdmin(caller))
      throw new Forbidden("Only the job's owner or an admin may access it");
    return found;
  }

  /** 422 for documents that do not exist, then 403 for documents of someone else. */
  private async checkSources(ids: readonly string[], caller: Caller): Promise<void> {
    if (ids.length === 0) return;
    const owners = await this.documents.ownersOf(ids);
    const issues: ValidationIssue[] = [];
    ids.forEach((id, i) => {
      if (owners.has(id)) return;
      issues.push(valueError(['body', 'source_documents', i], `no document ${id}`, id));
    });
    if (issues.length > 0) throw new Invalid(issues);
    if (isAdmin(caller)) return;
    const foreign = ids.find((id) => !isPrincipal(owners.get(id), caller));
    if (foreign) throw new Forbidden(`Document ${foreign} is not yours: a dataset may draw only on your own documents`);
  }

  /**
   * E11: the artifacts go first, then the record. If the artifact store fails, the
   * record stays, so the job is still visible and a retry can finish the deletion. The
   * record goes with its `finetune.dataset.deleted` event; a job changed meanwhile is read
   * again, one deleted meanwhile answers 404.
   */
  async delete(id: string, caller: Caller): Promise<JobDeleted> {
    let stored = await this.load(id, caller);
    await this.artifacts.deleteAll(stored.job.id);
    const change = { type: 'finetune.dataset.deleted', actor: caller.name, at: this.clock.iso() } as const;
    const deleted = await retry(
      async () => {
        if (await this.jobs.delete(stored, change)) return true;
        const again = await this.jobs.get(id);
        if (!again) throw new NotFound(`No fine-tuning job ${id}`);
        stored = again;
        return AGAIN;
      },
      { attempts: DELETE_ATTEMPTS },
    );
    if (!deleted.done) throw new Conflict(`Fine-tuning job ${id} kept changing while being deleted`);
    return { id: stored.job.id, deleted: true };
  }
}
