import { DeleteCommand, GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { conditionally } from '../../shared/aws/errors.js';
import {
  listAll,
  listAttributes,
  listOwned,
  OWNER_PRINCIPAL_INDEX,
  withoutListAttributes,
} from '../../shared/aws/listing.js';
import type { Page } from '../../shared/aws/pagination.js';
import type { FinetuneJob } from './schemas.js';

const LIST_PK = 'finetune-job';

/** Fine-tuning jobs as the service sees them (its public methods; DynamoFinetuneJobStore below implements them). */
export type FinetuneJobStore = Pick<DynamoFinetuneJobStore, keyof DynamoFinetuneJobStore>;

/** DynamoDB repository for fine-tuning dataset jobs (TABLES.finetuneJobs). */
export class DynamoFinetuneJobStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /** Stores a new job owned by the principal `ownerPrincipal`. */
  async create(job: FinetuneJob, ownerPrincipal: string): Promise<void> {
    await this.db.send(
      new PutCommand({
        TableName: this.tableName,
        Item: { ...job, owner_principal: ownerPrincipal, ...listAttributes(LIST_PK, job.created_at, job.id) },
        ConditionExpression: 'attribute_not_exists(id)',
      }),
    );
  }

  /** The job and its owner's principal (absent on jobs stored before principals were). */
  async get(id: string): Promise<{ job: FinetuneJob; ownerPrincipal: string | undefined } | undefined> {
    const out = await this.db.send(new GetCommand({ TableName: this.tableName, Key: { id }, ConsistentRead: true }));
    if (!out.Item) return undefined;
    const owner = out.Item.owner_principal;
    return { job: strip(out.Item), ownerPrincipal: typeof owner === 'string' ? owner : undefined };
  }

  /** The jobs of the principal `owner`, oldest first. */
  async listOwned(owner: string, limit: number, cursor: string | undefined): Promise<Page<FinetuneJob>> {
    const page = await listOwned(
      { db: this.db, tableName: this.tableName, tableKeys: ['id'], limit, cursor },
      OWNER_PRINCIPAL_INDEX,
      owner,
    );
    return { items: page.items.map(strip), nextCursor: page.nextCursor };
  }

  /** Every job, oldest first. */
  async listAll(limit: number, cursor: string | undefined): Promise<Page<FinetuneJob>> {
    const page = await listAll({ db: this.db, tableName: this.tableName, tableKeys: ['id'], limit, cursor }, LIST_PK);
    return { items: page.items.map(strip), nextCursor: page.nextCursor };
  }

  /** Deletes a job; false when there was none (never was, or already deleted). */
  async delete(id: string): Promise<boolean> {
    return conditionally(
      this.db.send(
        new DeleteCommand({ TableName: this.tableName, Key: { id }, ConditionExpression: 'attribute_exists(id)' }),
      ),
    );
  }
}

const strip = (item: Record<string, unknown>): FinetuneJob => {
  const { owner_principal: _owner, ...job } = withoutListAttributes<FinetuneJob & { owner_principal?: string }>(item);
  return job;
};
