import { GetCommand, TransactWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { Unavailable } from '../errors.js';
import { isTransactionRefused } from '../aws/errors.js';
import { batchGetAll } from '../aws/batch-get.js';
import { queryAll } from '../aws/pagination.js';
import { outboxEvent, eventPut, lastSequence } from '../events/outbox.js';
import {
  sortedNames,
  type ColumnSchema,
  type Metastore,
  type OutboxEvent,
  type TableRef,
  type TableSchema,
} from '../ports/metastore.js';

/**
 * Key layout of the `metastore` table (infra/tables.ts). Names inside a partition key have
 * `%` and `#` percent-encoded, so `#` only ever separates (a registered name holds neither,
 * so its key reads as it always did; a name looked up from elsewhere cannot alias another).
 */
const CATALOGS = 'CATALOG';
const keyPart = (name: string) => name.replace(/[%#]/g, (c) => (c === '%' ? '%25' : '%23'));
const schemasOf = (catalog: string) => `SCHEMA#${keyPart(catalog)}`;
const tablesOf = (catalog: string, schema: string) => `TABLE#${keyPart(catalog)}#${keyPart(schema)}`;

interface TableItem {
  catalog: string;
  schema: string;
  table: string;
  description?: string | null;
  columns?: { name: string; type: string; description?: string | null }[];
}

/** A stored table item as the port's schema. */
const toSchema = (item: TableItem): TableSchema => ({
  catalog: item.catalog,
  schema: item.schema,
  table: item.table,
  description: item.description ?? null,
  columns: (item.columns ?? []).map((c): ColumnSchema => ({
    name: c.name,
    type: c.type,
    description: c.description ?? null,
  })),
});

/**
 * Concurrent registrations in one schema touch the same catalog and schema items; those of
 * one table also race for its next event sequence.
 */
const TRANSACTION_ATTEMPTS = 8;

/**
 * The built-in metastore on the `metastore` table: catalogs, schemas and tables are items
 * whose sort key is their name, so each list is one (paginated) Query on a partition.
 */
export class BuiltinMetastore implements Metastore {
  readonly external = false;

  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  listCatalogs(): Promise<string[]> {
    return this.names(CATALOGS);
  }

  async listSchemas(catalog: string): Promise<string[] | undefined> {
    if (!(await this.exists(CATALOGS, catalog))) return undefined;
    return this.names(schemasOf(catalog));
  }

  /**
   * One paginated Query. Tables exist only in an existing schema (registerTable writes
   * both at once), so only an empty answer needs the schema's existence checked.
   */
  async listTables(catalog: string, schema: string): Promise<string[] | undefined> {
    const names = await this.names(tablesOf(catalog, schema));
    if (names.length > 0) return names;
    // A schema item exists only under its catalog.
    return (await this.exists(schemasOf(catalog), schema)) ? [] : undefined;
  }

  async getTable(catalog: string, schema: string, table: string): Promise<TableSchema | undefined> {
    // Consistent: a table's event data is read after its last sequence (OutboxEvent).
    const out = await this.db.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: tablesOf(catalog, schema), sk: table },
        ConsistentRead: true,
      }),
    );
    return out.Item ? toSchema(out.Item as TableItem) : undefined;
  }

  /** BatchGetItem, 100 keys a call; keys DynamoDB leaves unprocessed are asked again after a pause. */
  async getTables(refs: readonly TableRef[]): Promise<TableSchema[]> {
    const refKey = (r: TableRef) => JSON.stringify([r.catalog, r.schema, r.table]);
    const unique = [...new Map(refs.map((r) => [refKey(r), r])).values()];
    const items = await batchGetAll(
      this.db,
      this.tableName,
      unique.map((r) => ({ pk: tablesOf(r.catalog, r.schema), sk: r.table })),
    );
    const found = new Map(items.map((item) => toSchema(item as unknown as TableItem)).map((t) => [refKey(t), t]));
    return refs.flatMap((r) => found.get(refKey(r)) ?? []);
  }

  /**
   * One transaction: the catalog and schema items upserted (other attributes kept), the
   * table replaced and, when given, the registration's event put into the events table
   * with the subject's next sequence (conditional: a sequence another writer took
   * meanwhile cancels the transaction, which is tried again on a fresh read).
   */
  async registerTable(table: TableSchema, event?: OutboxEvent): Promise<void> {
    const upsertName = (pk: string, name: string) => ({
      Update: {
        TableName: this.tableName,
        Key: { pk, sk: name },
        UpdateExpression: 'SET #name = :name',
        ExpressionAttributeNames: { '#name': 'name' },
        ExpressionAttributeValues: { ':name': name },
      },
    });
    const writes = [
      upsertName(CATALOGS, table.catalog),
      upsertName(schemasOf(table.catalog), table.schema),
      {
        Put: {
          TableName: this.tableName,
          Item: {
            pk: tablesOf(table.catalog, table.schema),
            sk: table.table,
            catalog: table.catalog,
            schema: table.schema,
            table: table.table,
            description: table.description,
            columns: table.columns.map((c) => ({ name: c.name, type: c.type, description: c.description })),
          },
        },
      },
    ];
    for (let attempt = 1; ; attempt++) {
      let recorded: ReturnType<typeof eventPut>[] = [];
      if (event) {
        // The sequence first, the data second (see OutboxEvent).
        const last = await lastSequence(this.db, event.events, event.subject);
        const data = await event.data();
        recorded = [eventPut(event.events, outboxEvent(event.events, event.subject, event.change, last, data))];
      }
      try {
        await this.db.send(new TransactWriteCommand({ TransactItems: [...writes, ...recorded] }));
        return;
      } catch (err) {
        // Only the event's put has a condition: its sequence was taken meanwhile.
        if (!isTransactionConflict(err) && !(event && isTransactionRefused(err))) throw err;
        if (attempt === TRANSACTION_ATTEMPTS)
          throw new Unavailable('the metastore is busy with concurrent registrations; try again');
        await new Promise((resolve) => setTimeout(resolve, 20 * attempt + Math.random() * 30));
      }
    }
  }

  private async exists(pk: string, sk: string): Promise<boolean> {
    const out = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: { pk, sk }, ProjectionExpression: 'pk' }),
    );
    return out.Item !== undefined;
  }

  /** Every sort key of a partition: one Query, followed through its pages. */
  private async names(pk: string): Promise<string[]> {
    const items = await queryAll(this.db, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': pk },
      ProjectionExpression: 'sk',
    });
    return sortedNames(items.map((item) => item.sk as string));
  }
}

/** Another transaction touched the same items at the same time: retrying is safe. */
function isTransactionConflict(err: unknown): boolean {
  const e = err as { name?: string; CancellationReasons?: { Code?: string }[] } | undefined;
  return (
    e?.name === 'TransactionConflictException' ||
    (e?.name === 'TransactionCanceledException' &&
      (e.CancellationReasons ?? []).some((reason) => reason.Code === 'TransactionConflict'))
  );
}
