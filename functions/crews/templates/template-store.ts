import {
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { conditionally } from '../../../shared/aws/errors.js';
import { listAll, listAttributes, withoutListAttributes } from '../../../shared/aws/listing.js';
import { type Page } from '../../../shared/page.js';
import { outboxEvent, eventPut, type EventsTable } from '../../../shared/events/events-table.js';
import { stampNew, stampUpdate, unstamped } from '../../../shared/events/stamp.js';
import type { Change } from '../../../shared/events/types.js';
import type { CrewTemplate } from './template-schemas.js';
import { AGAIN, retry } from '../../../shared/retry.js';

/** Tries to delete an item whose change stamp moved on between read and write. */
const DELETE_ROUNDS = 5;

const LIST_PK = 'template';

/** A template's optional run limits (docs/crews.md), each its own attribute. */
const TEMPLATE_LIMITS = ['max_concurrent_runs', 'concurrency_key', 'run_timeout_seconds'] as const;

/** Index `by_name` (infra/tables.ts): templates by their name. */
const BY_NAME = 'by_name';

/** Crew templates as the service sees them (its public methods; DynamoTemplateStore below implements them). */
export interface TemplateStore {
  create(template: CrewTemplate, change: Change): Promise<void>;
  /** Stores the template unless one with its id exists (then nothing, and false). */
  createIfAbsent(template: CrewTemplate, change: Change): Promise<boolean>;
  get(id: string): Promise<CrewTemplate | undefined>;
  /** Up to `limit` templates named `name` (index `by_name`: one Query, eventually consistent). */
  named(name: string, limit: number): Promise<CrewTemplate[]>;
  /** Oldest first. */
  list(limit: number, cursor: string | undefined): Promise<Page<CrewTemplate>>;
  /**
   * Replaces an existing template's fields (id, author and creation stay); false when there
   * is none. An update, not a Put, so the subject's event count goes on.
   */
  replace(template: CrewTemplate, change: Change): Promise<boolean>;
  /**
   * Deletes a template and records its `deleted` event in one transaction, conditioned on
   * the template being as read (its event count); false when there is none.
   */
  delete(id: string, change: Change): Promise<boolean>;
}

/** DynamoDB repository for crew templates (TABLES.crewTemplates). */
export class DynamoTemplateStore implements TemplateStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly events: EventsTable,
  ) {}

  async create(template: CrewTemplate, change: Change): Promise<void> {
    await this.db.send(
      new PutCommand({
        TableName: this.tableName,
        Item: { ...templateItem(template), ...stampNew(change) },
        ConditionExpression: 'attribute_not_exists(id)',
      }),
    );
  }

  /** Stores the template unless one with its id exists (then nothing, and false). */
  async createIfAbsent(template: CrewTemplate, change: Change): Promise<boolean> {
    return conditionally(this.create(template, change));
  }

  async get(id: string): Promise<CrewTemplate | undefined> {
    const out = await this.db.send(new GetCommand({ TableName: this.tableName, Key: { id } }));
    return out.Item ? toCrewTemplate(out.Item) : undefined;
  }

  /** Up to `limit` templates named `name` (index `by_name`: one Query, eventually consistent). */
  async named(name: string, limit: number): Promise<CrewTemplate[]> {
    const out = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: BY_NAME,
        KeyConditionExpression: '#name = :name',
        ExpressionAttributeNames: { '#name': 'name' },
        ExpressionAttributeValues: { ':name': name },
        Limit: limit,
      }),
    );
    return (out.Items ?? []).map(toCrewTemplate);
  }

  /** Oldest first. */
  async list(limit: number, cursor: string | undefined): Promise<Page<CrewTemplate>> {
    const page = await listAll({ db: this.db, tableName: this.tableName, tableKeys: ['id'], limit, cursor }, LIST_PK);
    return { items: page.items.map(toCrewTemplate), nextCursor: page.nextCursor };
  }

  /**
   * Replaces an existing template's fields (id, author and creation stay); false when there
   * is none. An update, not a Put, so the subject's event count goes on.
   */
  async replace(template: CrewTemplate, change: Change): Promise<boolean> {
    const stamp = stampUpdate(change);
    const { name, description, variables_json, steps, updated_at } = templateItem(template);
    // The run limits a replacement leaves out are removed (a PUT replaces the whole template).
    const limitNames: Record<string, string> = {};
    const limitValues: Record<string, unknown> = {};
    const limitSets: string[] = [];
    const limitRemoves: string[] = [];
    TEMPLATE_LIMITS.forEach((field, i) => {
      limitNames[`#l${i}`] = field;
      if (template[field] === undefined) limitRemoves.push(`#l${i}`);
      else {
        limitValues[`:l${i}`] = template[field];
        limitSets.push(`, #l${i} = :l${i}`);
      }
    });
    return conditionally(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { id: template.id },
          UpdateExpression: `SET #name = :name, #description = :description, #variables = :variables, #steps = :steps, #updated = :updated${limitSets.join('')}, ${stamp.set} ADD ${stamp.add}${limitRemoves.length ? ` REMOVE ${limitRemoves.join(', ')}` : ''}`,
          ConditionExpression: 'attribute_exists(id)',
          ExpressionAttributeNames: {
            '#name': 'name',
            '#description': 'description',
            '#variables': 'variables_json',
            '#steps': 'steps',
            '#updated': 'updated_at',
            ...limitNames,
            ...stamp.names,
          },
          ExpressionAttributeValues: {
            ':name': name,
            ':description': description,
            ':variables': variables_json,
            ':steps': steps,
            ':updated': updated_at,
            ...limitValues,
            ...stamp.values,
          },
        }),
      ),
    );
  }

  /**
   * Deletes a template and records its `deleted` event in one transaction, conditioned on
   * the template being as read (its event count); false when there is none.
   */
  async delete(id: string, change: Change): Promise<boolean> {
    const tried = await retry(
      async () => {
        const out = await this.db.send(
          new GetCommand({ TableName: this.tableName, Key: { id }, ConsistentRead: true }),
        );
        if (!out.Item) return false;
        const seq = typeof out.Item.ev_seq === 'number' ? out.Item.ev_seq : undefined;
        const event = outboxEvent(this.events, `crew-templates/${id}`, change, seq ?? 0, {
          ...toCrewTemplate(out.Item),
        });
        const deleted = await conditionally(
          this.db.send(
            new TransactWriteCommand({
              TransactItems: [
                {
                  Delete: {
                    TableName: this.tableName,
                    Key: { id },
                    ConditionExpression:
                      seq === undefined ? 'attribute_exists(id) AND attribute_not_exists(ev_seq)' : 'ev_seq = :seq',
                    ...(seq === undefined ? {} : { ExpressionAttributeValues: { ':seq': seq } }),
                  },
                },
                eventPut(this.events, event),
              ],
            }),
          ),
        );
        // changed or deleted meanwhile: read it again
        return deleted ? true : AGAIN;
      },
      { attempts: DELETE_ROUNDS },
    );
    if (tried.done) return tried.value;
    throw new Error(`crew template ${id}: gave up deleting after repeated concurrent changes`);
  }
}

/*
 * Free-form JSON (variable defaults, run values, event data) is stored as JSON text, so
 * any JSON value round-trips where DynamoDB's native types would refuse some.
 */
const json = (value: unknown) => JSON.stringify(value ?? null);
const parsed = (text: unknown): unknown => (typeof text === 'string' ? JSON.parse(text) : undefined);

const templateItem = (template: CrewTemplate) => {
  const { variables, ...rest } = template;
  return { ...rest, variables_json: json(variables), ...listAttributes(LIST_PK, template.created_at, template.id) };
};

/** A stored template as the service (and its events) see it. */
export function toCrewTemplate(item: Record<string, unknown>): CrewTemplate {
  const { variables_json, ...rest } = withoutListAttributes<Record<string, unknown>>(unstamped(item));
  return { ...rest, variables: parsed(variables_json) ?? [] } as CrewTemplate;
}
