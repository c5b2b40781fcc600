import { GetCommand, PutCommand, TransactWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { conditionally } from '../../shared/aws/errors.js';
import {
  listAll,
  listAttributes,
  listOwned,
  OWNER_PRINCIPAL_INDEX,
  withoutListAttributes,
} from '../../shared/aws/listing.js';
import type { Page } from '../../shared/page.js';
import { outboxEvent, eventPut, type EventsTable } from '../../shared/events/events-table.js';
import { stampNew, unstamped } from '../../shared/events/stamp.js';
import type { Change } from '../../shared/events/types.js';
import type { FinetuneJob } from './schemas.js';

const LIST_PK = 'finetune-job';

/** A stored job: the job, its owner's principal and the sequence of its last stamped change. */
export interface StoredJob {
  readonly job: FinetuneJob;
  /** Absent on jobs stored before principals were. */
  readonly ownerPrincipal: string | undefined;
  /** The job's `ev_seq`: what a deletion is conditioned on; absent on jobs stored before events were. */
  readonly seq: number | undefined;
}

/** Fine-tuning jobs as the service sees them. */
export interface FinetuneJobStore {
  /** Stores a new job owned by the principal `ownerPrincipal`, its creation stamped (`change`). */
  create(job: FinetuneJob, ownerPrincipal: string, change: Change): Promise<void>;
  /** The job, its owner's principal and its last change's sequence; read consistently. */
  get(id: string): Promise<StoredJob | undefined>;
  /** The jobs of the principal `owner`, oldest first. */
  listOwned(owner: string, limit: number, cursor: string | undefined): Promise<Page<FinetuneJob>>;
  /** Every job, oldest first. */
  listAll(limit: number, cursor: string | undefined): Promise<Page<FinetuneJob>>;
  /**
   * Deletes the job read as `stored` with its deletion event, if unchanged since it was
   * read; false when it is gone or changed (then nothing is deleted).
   */
  delete(stored: StoredJob, change: Change): Promise<boolean>;
}

/** The subject of a job's domain events (docs/events-and-webhooks.md). */
export const datasetSubject = (id: string) => `finetune/datasets/${id}`;

/**
 * DynamoDB repository for fine-tuning dataset jobs (TABLES.finetuneJobs). A new job is
 * stamped with its change (shared/events/stamp.ts); a deletion records its event in the
 * events table in the deleting transaction. Without `events` (a store built alone, outside
 * the composition root) deletions record no event.
 */
export class DynamoFinetuneJobStore implements FinetuneJobStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly events: EventsTable,
  ) {}

  /** Stores a new job owned by the principal `ownerPrincipal`. */
  async create(job: FinetuneJob, ownerPrincipal: string, change: Change): Promise<void> {
    await this.db.send(
      new PutCommand({
        TableName: this.tableName,
        Item: {
          ...job,
          owner_principal: ownerPrincipal,
          ...listAttributes(LIST_PK, job.created_at, job.id),
          ...stampNew(change),
        },
        ConditionExpression: 'attribute_not_exists(id)',
      }),
    );
  }

  /** The job, its owner's principal and its last change's sequence. */
  async get(id: string): Promise<StoredJob | undefined> {
    const out = await this.db.send(new GetCommand({ TableName: this.tableName, Key: { id }, ConsistentRead: true }));
    if (!out.Item) return undefined;
    const { owner_principal: owner, ev_seq: seq } = out.Item;
    return {
      job: toFinetuneJob(out.Item),
      ownerPrincipal: typeof owner === 'string' ? owner : undefined,
      seq: typeof seq === 'number' ? seq : undefined,
    };
  }

  /** The jobs of the principal `owner`, oldest first. */
  async listOwned(owner: string, limit: number, cursor: string | undefined): Promise<Page<FinetuneJob>> {
    const page = await listOwned(
      { db: this.db, tableName: this.tableName, tableKeys: ['id'], limit, cursor },
      OWNER_PRINCIPAL_INDEX,
      owner,
    );
    return { items: page.items.map(toFinetuneJob), nextCursor: page.nextCursor };
  }

  /** Every job, oldest first. */
  async listAll(limit: number, cursor: string | undefined): Promise<Page<FinetuneJob>> {
    const page = await listAll({ db: this.db, tableName: this.tableName, tableKeys: ['id'], limit, cursor }, LIST_PK);
    return { items: page.items.map(toFinetuneJob), nextCursor: page.nextCursor };
  }

  /**
   * Deletes the job read as `stored` with its `finetune.dataset.deleted` event (data: the job
   * as it was) in one transaction, conditioned on the job being unchanged since; false when
   * it is gone or changed (then nothing is deleted).
   */
  async delete(stored: StoredJob, change: Change): Promise<boolean> {
    const { job, seq } = stored;
    const condition = {
      ConditionExpression: `attribute_exists(id) AND ${seq === undefined ? 'attribute_not_exists(#seq)' : '#seq = :seq'}`,
      ExpressionAttributeNames: { '#seq': 'ev_seq' },
      ...(seq === undefined ? {} : { ExpressionAttributeValues: { ':seq': seq } }),
    };
    const Key = { id: job.id };
    const event = outboxEvent(this.events, datasetSubject(job.id), change, seq ?? 0, job);
    return conditionally(
      this.db.send(
        new TransactWriteCommand({
          TransactItems: [{ Delete: { TableName: this.tableName, Key, ...condition } }, eventPut(this.events, event)],
        }),
      ),
    );
  }
}

/** A stored job as GET answers it: listing attributes, owner principal and change stamp left out. */
export const toFinetuneJob = (item: Record<string, unknown>): FinetuneJob => {
  const { owner_principal: _owner, ...job } = withoutListAttributes<FinetuneJob & { owner_principal?: string }>(
    unstamped(item),
  );
  return job;
};
