import { randomUUID } from 'node:crypto';
import {
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { Conflict, Invalid, NotFound, Unavailable, valueError } from '../errors.js';
import { conditionally } from '../aws/errors.js';
import { batchGetAll } from '../aws/batch-get.js';
import { queryAll } from '../aws/pagination.js';
import { outboxEvent, eventPut, lastSequence } from '../events/events-table.js';
import {
  sortedNames,
  type AlterOperation,
  type CatalogDetail,
  type ColumnDefinition,
  type ColumnSchema,
  type Metastore,
  type OutboxEvent,
  type Properties,
  type SchemaDetail,
  type TablePreview,
  type TableRef,
  type TableSchema,
} from '../ports/metastore.js';
import { AGAIN, backoffMs, retry } from '../retry.js';

/**
 * Key layout of the `metastore` table (infra/tables.ts). Names inside a partition key have
 * `%` and `#` percent-encoded, so `#` only ever separates (a registered name holds neither,
 * so its key reads as it always did; a name looked up from elsewhere cannot alias another).
 */
const CATALOGS = 'CATALOG';
const keyPart = (name: string) => name.replace(/[%#]/g, (c) => (c === '%' ? '%25' : '%23'));
const schemasOf = (catalog: string) => `SCHEMA#${keyPart(catalog)}`;
const tablesOf = (catalog: string, schema: string) => `TABLE#${keyPart(catalog)}#${keyPart(schema)}`;
const catalogKey = (catalog: string) => ({ pk: CATALOGS, sk: catalog });
const schemaKey = (catalog: string, schema: string) => ({ pk: schemasOf(catalog), sk: schema });
const tableKey = (ref: TableRef) => ({ pk: tablesOf(ref.catalog, ref.schema), sk: ref.table });

/**
 * Each parent counts its children in the transaction that creates or drops one, so details
 * are one Query and a drop can hold to "empty" in its condition. Items written before the
 * counters existed lack them: they are counted once, when first needed (`counted`).
 */
const SCHEMA_COUNT = 'schema_count';
const TABLE_COUNT = 'table_count';
/** A new random value on every write of a table: an alteration is written only over the item it was computed from. */
const REVISION = 'revision';

interface TableItem {
  catalog: string;
  schema: string;
  table: string;
  description?: string | null;
  columns?: { name: string; type: string; description?: string | null; nullable?: boolean }[];
  properties?: StoredProperty[];
  revision?: string;
}

/** Properties as a list of pairs: names come from users, so they are never attribute names. */
interface StoredProperty {
  name: string;
  value: string | number | boolean;
}

const storedProperties = (properties: Properties): StoredProperty[] =>
  [...properties].map(([name, value]) => ({ name, value }));

const propertiesOf = (stored: StoredProperty[] | undefined): Map<string, string | number | boolean> =>
  new Map((stored ?? []).map((p) => [p.name, p.value]));

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

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** What a change writes, and the table as it leaves it (the event's `after`) when it computes one. */
interface Plan {
  readonly writes: TransactItem[];
  readonly after?: TableSchema;
}

/**
 * What a refused transaction means, given which of its writes' conditions failed: an error
 * for the caller, or `retry` (what the plan read has changed; plan again).
 */
type Refusal = (failed: readonly boolean[]) => Promise<Error | 'retry'>;

const countIs = (attribute: string) => ({
  ExpressionAttributeNames: { '#count': attribute },
  ExpressionAttributeValues: { ':zero': 0 },
});

/** Adds `delta` to a parent's counter, which must be there (a parent counted: see `counted`). */
const bump = (tableName: string, key: Record<string, string>, attribute: string, delta: 1 | -1): TransactItem => ({
  Update: {
    TableName: tableName,
    Key: key,
    UpdateExpression: 'SET #count = #count + :delta',
    ConditionExpression: 'attribute_exists(#count)',
    ExpressionAttributeNames: { '#count': attribute },
    ExpressionAttributeValues: { ':delta': delta },
  },
});

/**
 * The built-in metastore on the `metastore` table: catalogs, schemas and tables are items
 * whose sort key is their name, so each list is one (paginated) Query on a partition.
 * A catalog item keeps its `type`, `properties` and `schema_count`, a schema item its
 * `properties` and `table_count`; every creation or drop changes its parent's counter in
 * its own transaction (with its domain event), so details are one Query and a parent
 * with children cannot be dropped, however the writes race.
 */
export class BuiltinMetastore implements Metastore {
  readonly engine = 'builtin';
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
    const item = await this.readTable({ catalog, schema, table });
    return item ? toSchema(item) : undefined;
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

  /** One paginated Query on the catalogs' partition. */
  async catalogDetails(): Promise<CatalogDetail[]> {
    const items = await queryAll(this.db, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': CATALOGS },
    });
    const details = await Promise.all(
      items.map(async (item) => ({
        name: item.sk as string,
        type: typeof item.type === 'string' ? item.type : null,
        schema_count: await this.countOf(item, SCHEMA_COUNT, schemasOf(item.sk as string)),
      })),
    );
    return sortedByName(details);
  }

  /** One paginated Query; only an empty answer needs the catalog's existence checked. */
  async schemaDetails(catalog: string): Promise<SchemaDetail[] | undefined> {
    const items = await queryAll(this.db, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': schemasOf(catalog) },
    });
    if (items.length === 0) return (await this.exists(CATALOGS, catalog)) ? [] : undefined;
    const details = await Promise.all(
      items.map(async (item) => ({
        name: item.sk as string,
        table_count: await this.countOf(item, TABLE_COUNT, tablesOf(catalog, item.sk as string)),
      })),
    );
    return sortedByName(details);
  }

  /** One paginated Query; only an empty answer needs the schema's existence checked. */
  async tableDetails(catalog: string, schema: string): Promise<TableSchema[] | undefined> {
    const items = await queryAll(this.db, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': tablesOf(catalog, schema) },
    });
    if (items.length === 0) return (await this.exists(schemasOf(catalog), schema)) ? [] : undefined;
    return items.map((item) => toSchema(item as unknown as TableItem)).sort((a, b) => byName(a.table, b.table));
  }

  /** The built-in metastore holds no rows: the columns only. */
  async previewTable(ref: TableRef): Promise<TablePreview | undefined> {
    const item = await this.readTable(ref);
    return item ? { columns: (item.columns ?? []).map((c) => c.name), rows: [] } : undefined;
  }

  async createCatalog(name: string, type: string, properties: Properties, event?: OutboxEvent): Promise<void> {
    await this.commit(
      async () => ({
        writes: [
          {
            Put: {
              TableName: this.tableName,
              Item: {
                ...catalogKey(name),
                name,
                type,
                properties: storedProperties(properties),
                [SCHEMA_COUNT]: 0,
              },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
        ],
      }),
      event,
      async () => new Conflict(`Catalog ${name} exists already`),
    );
  }

  /** Deleted only while its `schema_count` is 0, in the condition of the delete itself. */
  async dropCatalog(name: string, event?: OutboxEvent): Promise<void> {
    await this.commit(
      async () => ({
        writes: [
          {
            Delete: {
              TableName: this.tableName,
              Key: catalogKey(name),
              ConditionExpression: '#count = :zero',
              ...countIs(SCHEMA_COUNT),
            },
          },
        ],
      }),
      event,
      async () => {
        const count = await this.counted(catalogKey(name), SCHEMA_COUNT, schemasOf(name));
        if (count === undefined) return new NotFound(`No catalog ${name}`);
        return count > 0 ? new Conflict(`Catalog ${name} has ${plural(count, 'schema')}: drop them first`) : 'retry';
      },
    );
  }

  async createSchema(catalog: string, schema: string, properties: Properties, event?: OutboxEvent): Promise<void> {
    await this.commit(
      async () => ({
        writes: [
          bump(this.tableName, catalogKey(catalog), SCHEMA_COUNT, 1),
          {
            Put: {
              TableName: this.tableName,
              Item: {
                ...schemaKey(catalog, schema),
                name: schema,
                catalog,
                properties: storedProperties(properties),
                [TABLE_COUNT]: 0,
              },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
        ],
      }),
      event,
      async ([catalogRefused, schemaRefused]) => {
        if (catalogRefused) {
          const count = await this.counted(catalogKey(catalog), SCHEMA_COUNT, schemasOf(catalog));
          if (count === undefined) return new NotFound(`No catalog ${catalog}`);
        }
        return schemaRefused ? new Conflict(`Schema ${catalog}.${schema} exists already`) : 'retry';
      },
    );
  }

  /** Deleted only while its `table_count` is 0; its catalog's `schema_count` goes down in the same transaction. */
  async dropSchema(catalog: string, schema: string, event?: OutboxEvent): Promise<void> {
    await this.commit(
      async () => ({
        writes: [
          {
            Delete: {
              TableName: this.tableName,
              Key: schemaKey(catalog, schema),
              ConditionExpression: '#count = :zero',
              ...countIs(TABLE_COUNT),
            },
          },
          bump(this.tableName, catalogKey(catalog), SCHEMA_COUNT, -1),
        ],
      }),
      event,
      async ([schemaRefused, catalogRefused]) => {
        if (schemaRefused) {
          const count = await this.counted(schemaKey(catalog, schema), TABLE_COUNT, tablesOf(catalog, schema));
          if (count === undefined) return this.missingSchema(catalog, schema);
          if (count > 0)
            return new Conflict(`Schema ${catalog}.${schema} has ${plural(count, 'table')}: drop them first`);
        }
        if (catalogRefused) await this.counted(catalogKey(catalog), SCHEMA_COUNT, schemasOf(catalog));
        return 'retry';
      },
    );
  }

  async createTable(
    ref: TableRef,
    columns: readonly ColumnDefinition[],
    properties: Properties,
    event?: OutboxEvent,
  ): Promise<TableSchema> {
    const item: TableItem = {
      catalog: ref.catalog,
      schema: ref.schema,
      table: ref.table,
      description: null,
      columns: columns.map((c) => ({ name: c.name, type: c.type, description: c.comment, nullable: c.nullable })),
      properties: storedProperties(properties),
    };
    const created = toSchema(item);
    await this.commit(
      async () => ({
        writes: [
          bump(this.tableName, schemaKey(ref.catalog, ref.schema), TABLE_COUNT, 1),
          {
            Put: {
              TableName: this.tableName,
              Item: { ...tableKey(ref), ...item, [REVISION]: randomUUID() },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
        ],
        after: created,
      }),
      event,
      async ([schemaRefused, tableRefused]) => {
        if (schemaRefused) {
          const count = await this.counted(
            schemaKey(ref.catalog, ref.schema),
            TABLE_COUNT,
            tablesOf(ref.catalog, ref.schema),
          );
          if (count === undefined) return this.missingSchema(ref.catalog, ref.schema);
        }
        return tableRefused ? new Conflict(`Table ${ref.catalog}.${ref.schema}.${ref.table} exists already`) : 'retry';
      },
    );
    return created;
  }

  async dropTable(ref: TableRef, event?: OutboxEvent): Promise<void> {
    await this.commit(
      async () => ({
        writes: [
          { Delete: { TableName: this.tableName, Key: tableKey(ref), ConditionExpression: 'attribute_exists(pk)' } },
          bump(this.tableName, schemaKey(ref.catalog, ref.schema), TABLE_COUNT, -1),
        ],
      }),
      event,
      async ([tableRefused, schemaRefused]) => {
        if (tableRefused) return new NotFound(`No table ${ref.catalog}.${ref.schema}.${ref.table}`);
        if (schemaRefused)
          await this.counted(schemaKey(ref.catalog, ref.schema), TABLE_COUNT, tablesOf(ref.catalog, ref.schema));
        return 'retry';
      },
    );
  }

  /**
   * Reads the table, applies every operation to it in memory (the first one refused throws
   * Invalid and nothing is written), and writes the result over the revision it read: a
   * concurrent change makes it read and apply again, so no update is lost.
   */
  async alterTable(ref: TableRef, operations: readonly AlterOperation[], event?: OutboxEvent): Promise<TableSchema> {
    const altered = await this.commit(
      async () => {
        const current = await this.readTable(ref);
        if (!current) throw new NotFound(`No table ${ref.catalog}.${ref.schema}.${ref.table}`);
        const next = applyOperations(current, operations);
        const revision = current[REVISION];
        return {
          writes: [
            {
              Put: {
                TableName: this.tableName,
                Item: { ...tableKey(ref), ...next, [REVISION]: randomUUID() },
                ...(revision === undefined
                  ? {
                      ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(#revision)',
                      ExpressionAttributeNames: { '#revision': REVISION },
                    }
                  : {
                      ConditionExpression: '#revision = :revision',
                      ExpressionAttributeNames: { '#revision': REVISION },
                      ExpressionAttributeValues: { ':revision': revision },
                    }),
              },
            },
          ],
          after: toSchema(next),
        };
      },
      event,
      async () => 'retry',
    );
    return altered!;
  }

  /**
   * One transaction: the catalog and schema created when missing, the table replaced and,
   * when given, the registration's event put into the events table with the subject's next
   * sequence. Each parent's counter goes up only when its child is new: the items are read
   * first and every write holds to what was read (exists, or does not), so a registration
   * racing another change reads again and counts right.
   */
  async registerTable(table: TableSchema, event?: OutboxEvent): Promise<void> {
    const ref: TableRef = table;
    const item: TableItem = {
      catalog: table.catalog,
      schema: table.schema,
      table: table.table,
      description: table.description,
      columns: table.columns.map((c) => ({ name: c.name, type: c.type, description: c.description })),
    };
    await this.commit(
      async () => {
        const [catalogCount, schemaCount, existing] = await Promise.all([
          this.counted(catalogKey(table.catalog), SCHEMA_COUNT, schemasOf(table.catalog)),
          this.counted(schemaKey(table.catalog, table.schema), TABLE_COUNT, tablesOf(table.catalog, table.schema)),
          this.readTable(ref),
        ]);
        const writes: TransactItem[] = [];
        if (catalogCount === undefined) {
          writes.push({
            Put: {
              TableName: this.tableName,
              Item: { ...catalogKey(table.catalog), name: table.catalog, [SCHEMA_COUNT]: 1 },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          });
        } else if (schemaCount === undefined) {
          writes.push(bump(this.tableName, catalogKey(table.catalog), SCHEMA_COUNT, 1));
        }
        if (schemaCount === undefined) {
          writes.push({
            Put: {
              TableName: this.tableName,
              Item: {
                ...schemaKey(table.catalog, table.schema),
                name: table.schema,
                catalog: table.catalog,
                [TABLE_COUNT]: 1,
              },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          });
        } else if (!existing) {
          writes.push(bump(this.tableName, schemaKey(table.catalog, table.schema), TABLE_COUNT, 1));
        }
        writes.push({
          Put: {
            TableName: this.tableName,
            // Registration replaces the schema; properties given at creation are kept.
            Item: {
              ...tableKey(ref),
              ...item,
              ...(existing?.properties ? { properties: existing.properties } : {}),
              [REVISION]: randomUUID(),
            },
            ConditionExpression: existing ? 'attribute_exists(pk)' : 'attribute_not_exists(pk)',
          },
        });
        return { writes };
      },
      event,
      async () => 'retry',
    );
  }

  /**
   * Runs a change as one transaction with its event: the subject's last sequence is read
   * first, then `plan` reads what it needs and builds the writes, then the event's data is
   * read (see OutboxEvent). A refusal is handed to `refused` with the writes whose condition
   * failed; a sequence taken meanwhile, or another transaction on the same items, is retried.
   */
  private async commit(
    plan: () => Promise<Plan>,
    event: OutboxEvent | undefined,
    refused: Refusal,
  ): Promise<TableSchema | undefined> {
    const committed = await retry(
      async (): Promise<TableSchema | undefined | typeof AGAIN> => {
        const last = event ? await lastSequence(this.db, event.events, event.subject) : 0;
        const { writes, after } = await plan();
        const recorded = event
          ? [
              eventPut(
                event.events,
                outboxEvent(event.events, event.subject, event.change, last, await event.data(after)),
              ),
            ]
          : [];
        try {
          await this.db.send(new TransactWriteCommand({ TransactItems: [...writes, ...recorded] }));
          return after;
        } catch (err) {
          const reasons = cancellationReasons(err);
          if (!reasons) throw err;
          const failed = writes.map((_, i) => reasons[i] === 'ConditionalCheckFailed');
          if (failed.some(Boolean)) {
            const verdict = await refused(failed);
            if (verdict !== 'retry') throw verdict;
          } else if (!reasons.some((code) => code === 'ConditionalCheckFailed' || code === 'TransactionConflict')) {
            throw err;
          }
          return AGAIN;
        }
      },
      {
        attempts: TRANSACTION_ATTEMPTS,
        delayMs: (attempt) => backoffMs(attempt - 1, { baseMs: 20, maxMs: 400, jitter: 'full' }),
      },
    );
    if (committed.done) return committed.value;
    throw new Unavailable('the metastore is busy with concurrent changes; try again');
  }

  /** The item's counter, or the children counted when the item predates counters. */
  private async countOf(item: Record<string, unknown>, attribute: string, childrenPk: string): Promise<number> {
    const count = item[attribute];
    return typeof count === 'number' ? count : this.countChildren(childrenPk);
  }

  /**
   * A parent's counter (undefined: no such parent). An item written before counters existed
   * gets its counter now, from its children counted with a consistent Query: every write
   * that adds or removes a child holds to the counter being there, so none slips in between.
   */
  private async counted(
    key: Record<string, string>,
    attribute: string,
    childrenPk: string,
  ): Promise<number | undefined> {
    const { Item } = await this.db.send(new GetCommand({ TableName: this.tableName, Key: key, ConsistentRead: true }));
    if (!Item) return undefined;
    if (typeof Item[attribute] === 'number') return Item[attribute] as number;
    const count = await this.countChildren(childrenPk);
    await conditionally(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: key,
          UpdateExpression: 'SET #count = :count',
          ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(#count)',
          ExpressionAttributeNames: { '#count': attribute },
          ExpressionAttributeValues: { ':count': count },
        }),
      ),
    );
    return count;
  }

  private async countChildren(pk: string): Promise<number> {
    let count = 0;
    let start: Record<string, unknown> | undefined;
    do {
      const out = await this.db.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': pk },
          Select: 'COUNT',
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      count += out.Count ?? 0;
      start = out.LastEvaluatedKey;
    } while (start);
    return count;
  }

  /** The NotFound for a missing schema, naming the catalog when that is what is missing. */
  private async missingSchema(catalog: string, schema: string): Promise<NotFound> {
    return (await this.exists(CATALOGS, catalog))
      ? new NotFound(`No schema ${catalog}.${schema}`)
      : new NotFound(`No catalog ${catalog}`);
  }

  /** Consistent: a table's event data is read after its last sequence (OutboxEvent). */
  private async readTable(ref: TableRef): Promise<TableItem | undefined> {
    const out = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: tableKey(ref), ConsistentRead: true }),
    );
    return out.Item as TableItem | undefined;
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

const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const sortedByName = <T extends { name: string }>(items: T[]): T[] => items.sort((a, b) => byName(a.name, b.name));
const plural = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

/** The codes of a cancelled transaction, one per item (`None` where it was fine); undefined for any other error. */
function cancellationReasons(err: unknown): (string | undefined)[] | undefined {
  const e = err as { name?: string; CancellationReasons?: { Code?: string }[] } | undefined;
  if (e?.name === 'TransactionConflictException') return ['TransactionConflict'];
  if (e?.name !== 'TransactionCanceledException') return undefined;
  return (e.CancellationReasons ?? []).map((reason) => reason.Code);
}

/**
 * The table item with `operations` applied in order, or Invalid (422) naming the first
 * one refused by its index: an unknown column, a name taken, dropping the last column.
 */
export function applyOperations(current: TableItem, operations: readonly AlterOperation[]): TableItem {
  const columns = [...(current.columns ?? [])].map((c) => ({ ...c }));
  let description = current.description ?? null;
  const properties = propertiesOf(current.properties);
  const name = `${current.catalog}.${current.schema}.${current.table}`;
  const refuse = (i: number, field: string, error: string, input: unknown): never => {
    throw new Invalid([
      valueError(['body', 'operations', i, field], `operation ${i} (${operations[i]!.op}): ${error}`, input),
    ]);
  };
  const find = (i: number, column: string) => {
    const at = columns.findIndex((c) => c.name === column);
    if (at < 0) refuse(i, 'name', `table ${name} has no column '${column}'`, column);
    return at;
  };
  operations.forEach((op, i) => {
    switch (op.op) {
      case 'add_column':
        if (columns.some((c) => c.name === op.name))
          refuse(i, 'name', `table ${name} has a column '${op.name}' already`, op.name);
        columns.push({ name: op.name, type: op.type, description: op.comment, nullable: true });
        break;
      case 'drop_column': {
        const at = find(i, op.name);
        if (columns.length === 1)
          refuse(i, 'name', `'${op.name}' is the last column of table ${name}: a table keeps at least one`, op.name);
        columns.splice(at, 1);
        break;
      }
      case 'rename_column': {
        const at = find(i, op.name);
        if (op.new_name !== op.name && columns.some((c) => c.name === op.new_name))
          refuse(i, 'new_name', `table ${name} has a column '${op.new_name}' already`, op.new_name);
        columns[at]!.name = op.new_name;
        break;
      }
      case 'set_column_comment':
        columns[find(i, op.name)]!.description = op.comment;
        break;
      case 'set_comment':
        description = op.comment;
        break;
      case 'set_properties':
        for (const [key, value] of op.properties) properties.set(key, value);
        break;
    }
  });
  return { ...current, description, columns, properties: storedProperties(properties) };
}
