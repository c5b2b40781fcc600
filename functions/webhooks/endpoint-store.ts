import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { conditionally, isConditionFailed } from '../../shared/aws/errors.js';
import { listAll, listAttributes, withoutListAttributes } from '../../shared/aws/listing.js';
import { queryAll } from '../../shared/aws/pagination.js';
import { type Page } from '../../shared/page.js';
import { STAMP_ATTRIBUTES, stampUpdate } from '../../shared/events/stamp.js';
import type { Change } from '../../shared/events/types.js';
import type { Sealed } from '../../shared/secrets.js';
import { RUN_ENDPOINT_KIND, RUN_ENDPOINT_LIST_PK } from './run-endpoint.js';
import type { EndpointKind, WebhookEndpoint } from './schemas.js';

/** Each kind of endpoint is listed apart: the API's, and the crew runs' own. */
const LIST_PK: Record<EndpointKind, string> = { admin: 'webhook', run: RUN_ENDPOINT_LIST_PK };

/** An endpoint as stored: the public record, whose it is, and its sealed secrets. */
export interface StoredEndpoint {
  readonly endpoint: WebhookEndpoint;
  readonly principal: string;
  readonly secret: Sealed;
  /** The secret before the last rotation: deliveries carry its signature too, until `until`. */
  readonly previousSecret: { readonly sealed: Sealed; readonly until: string } | undefined;
  /** Since when every delivery attempt has failed (none succeeded since); undefined when one did. */
  readonly failingSince: string | undefined;
  /** A crew run's own endpoint (run-endpoint.ts), listed apart (`?kind=run`). */
  readonly forRun: boolean;
  /** A run's endpoint whose run was cancelled: its deliveries of events before this sequence are not sent. */
  readonly stoppedBefore: number | undefined;
}

/** The fields an update may set. */
export type EndpointFields = Partial<
  Pick<WebhookEndpoint, 'url' | 'event_types' | 'description' | 'enabled' | 'disabled_reason'>
> &
  Pick<WebhookEndpoint, 'updated_at'>;

/** Webhook endpoints as the services see them (DynamoWebhookStore below implements them). */
export interface WebhookStore {
  create(endpoint: WebhookEndpoint, principal: string, secret: Sealed): Promise<void>;
  get(id: string): Promise<StoredEndpoint | undefined>;
  /** Endpoints of one kind, oldest first. */
  list(kind: EndpointKind, limit: number, cursor: string | undefined): Promise<Page<WebhookEndpoint>>;
  /** Every enabled endpoint of the API (a Query of the listing index: endpoints are few). */
  enabled(): Promise<WebhookEndpoint[]>;
  /**
   * Sets `fields` on an endpoint that is still `enabled` as read (so a transition is decided
   * on what it was), stamping `change` when there is one. `enabled: true` also forgets the
   * failures so far. Undefined when there is no such endpoint, `changed` when it changed.
   */
  update(
    id: string,
    fields: EndpointFields,
    wasEnabled: boolean,
    change: Change | undefined,
  ): Promise<WebhookEndpoint | 'changed' | undefined>;
  /**
   * A new secret; the one it replaces keeps signing until `previousUntil`. Conditioned on the
   * secret being the one read, so two rotations at once cannot lose one's secret.
   */
  rotate(
    id: string,
    current: Sealed,
    secret: Sealed,
    previousUntil: string,
    at: string,
  ): Promise<WebhookEndpoint | 'changed' | undefined>;
  /** Deletes an endpoint (of the API or a crew run's own); false when there was none. */
  delete(id: string): Promise<boolean>;
  /**
   * Marks a run's endpoint as stopped before `sequence` (its run was cancelled): never
   * lowered, so a cancel handed again, or an earlier one, changes nothing. False when
   * there is no such endpoint.
   */
  stopBefore(id: string, sequence: number): Promise<boolean>;
  /** The next sequence of the endpoint's test pings (1, 2, 3...); undefined when there is no endpoint. */
  nextTestSequence(id: string): Promise<number | undefined>;
  /**
   * Disables an enabled endpoint for `reason`, stamped with `change` (its
   * `webhook.endpoint.disabled` event); with `failingSinceAtMost`, only while its deliveries
   * have failed since then or earlier. False when it was not enabled (or not failing so long).
   */
  disable(id: string, reason: string, change: Change, failingSinceAtMost?: string): Promise<boolean>;
  /** Notes a failed attempt: since when the endpoint's deliveries have all failed (undefined: no endpoint). */
  noteFailure(id: string, at: string): Promise<string | undefined>;
  /** Notes a delivered attempt: the endpoint is no longer failing (written only when it was). */
  noteSuccess(id: string): Promise<void>;
}

/** DynamoDB repository for webhook endpoints (TABLES.webhooks). */
export class DynamoWebhookStore implements WebhookStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async create(endpoint: WebhookEndpoint, principal: string, secret: Sealed): Promise<void> {
    await this.db.send(
      new PutCommand({
        TableName: this.tableName,
        Item: {
          ...endpoint,
          created_by_principal: principal,
          secret,
          ...listAttributes(LIST_PK.admin, endpoint.created_at, endpoint.id),
        },
        ConditionExpression: 'attribute_not_exists(id)',
      }),
    );
  }

  async get(id: string): Promise<StoredEndpoint | undefined> {
    const out = await this.db.send(new GetCommand({ TableName: this.tableName, Key: { id }, ConsistentRead: true }));
    return out.Item ? stored(out.Item) : undefined;
  }

  /** Endpoints of one kind, oldest first. */
  async list(kind: EndpointKind, limit: number, cursor: string | undefined): Promise<Page<WebhookEndpoint>> {
    const page = await listAll(
      { db: this.db, tableName: this.tableName, tableKeys: ['id'], limit, cursor },
      LIST_PK[kind],
    );
    return { items: page.items.map(toEndpoint), nextCursor: page.nextCursor };
  }

  /** Every enabled endpoint of the API (a Query of the listing index: endpoints are few). */
  async enabled(): Promise<WebhookEndpoint[]> {
    const items = await queryAll(this.db, {
      TableName: this.tableName,
      IndexName: 'by_created',
      KeyConditionExpression: 'list_pk = :pk',
      FilterExpression: 'enabled = :on',
      ExpressionAttributeValues: { ':pk': LIST_PK.admin, ':on': true },
    });
    return items.map(toEndpoint);
  }

  /**
   * Sets `fields` on an endpoint that is still `enabled` as read (so a transition is decided
   * on what it was), stamping `change` when there is one. `enabled: true` also forgets the
   * failures so far. Undefined when there is no such endpoint, `changed` when it changed.
   */
  async update(
    id: string,
    fields: EndpointFields,
    wasEnabled: boolean,
    change: Change | undefined,
  ): Promise<WebhookEndpoint | 'changed' | undefined> {
    const entries = Object.entries(fields);
    const stamp = change && stampUpdate(change);
    const sets = [...entries.map((_, i) => `#f${i} = :f${i}`), ...(stamp ? [stamp.set] : [])];
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { id },
          UpdateExpression:
            `SET ${sets.join(', ')}` +
            (fields.enabled === true ? ' REMOVE failing_since' : '') +
            (stamp ? ` ADD ${stamp.add}` : ''),
          ConditionExpression: 'attribute_exists(id) AND enabled = :was',
          ExpressionAttributeNames: {
            ...Object.fromEntries(entries.map(([name], i) => [`#f${i}`, name])),
            ...stamp?.names,
          },
          ExpressionAttributeValues: {
            ...Object.fromEntries(entries.map(([, value], i) => [`:f${i}`, value])),
            ':was': wasEnabled,
            ...stamp?.values,
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return toEndpoint(out.Attributes!);
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
      return (await this.get(id)) ? 'changed' : undefined;
    }
  }

  /**
   * A new secret; the one it replaces keeps signing until `previousUntil`. Conditioned on the
   * secret being the one read, so two rotations at once cannot lose one's secret.
   */
  async rotate(
    id: string,
    current: Sealed,
    secret: Sealed,
    previousUntil: string,
    at: string,
  ): Promise<WebhookEndpoint | 'changed' | undefined> {
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { id },
          UpdateExpression:
            'SET secret = :secret, previous_secret = :previous, previous_until = :until, updated_at = :at',
          ConditionExpression: 'secret.#data = :current',
          ExpressionAttributeNames: { '#data': 'data' },
          ExpressionAttributeValues: {
            ':secret': secret,
            ':previous': current,
            ':until': previousUntil,
            ':at': at,
            ':current': current.data,
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return toEndpoint(out.Attributes!);
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
      return (await this.get(id)) ? 'changed' : undefined;
    }
  }

  /** Deletes an endpoint (of the API or a crew run's own); false when there was none. */
  async delete(id: string): Promise<boolean> {
    return conditionally(
      this.db.send(
        new DeleteCommand({ TableName: this.tableName, Key: { id }, ConditionExpression: 'attribute_exists(id)' }),
      ),
    );
  }

  /**
   * Marks a run's endpoint as stopped before `sequence` (its run was cancelled): never
   * lowered, so a cancel handed again, or an earlier one, changes nothing. False when
   * there is no such endpoint.
   */
  async stopBefore(id: string, sequence: number): Promise<boolean> {
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { id },
          UpdateExpression: 'SET stopped_before = :seq',
          ConditionExpression:
            'attribute_exists(id) AND kind = :run AND (attribute_not_exists(stopped_before) OR stopped_before < :seq)',
          ExpressionAttributeValues: { ':seq': sequence, ':run': RUN_ENDPOINT_KIND },
        }),
      );
      return true;
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
      return (await this.get(id)) !== undefined;
    }
  }

  /** The next sequence of the endpoint's test pings (1, 2, 3...); undefined when there is no endpoint. */
  async nextTestSequence(id: string): Promise<number | undefined> {
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { id },
          UpdateExpression: 'ADD test_seq :one',
          ConditionExpression: 'attribute_exists(id)',
          ExpressionAttributeValues: { ':one': 1 },
          ReturnValues: 'UPDATED_NEW',
        }),
      );
      return Number(out.Attributes?.test_seq);
    } catch (err) {
      if (isConditionFailed(err)) return undefined;
      throw err;
    }
  }

  /**
   * Disables an enabled endpoint for `reason`, stamped with `change` (its
   * `webhook.endpoint.disabled` event); with `failingSinceAtMost`, only while its deliveries
   * have failed since then or earlier. False when it was not enabled (or not failing so long).
   */
  async disable(id: string, reason: string, change: Change, failingSinceAtMost?: string): Promise<boolean> {
    const stamp = stampUpdate(change);
    return conditionally(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { id },
          UpdateExpression: `SET enabled = :off, disabled_reason = :reason, updated_at = :at, ${stamp.set} ADD ${stamp.add}`,
          ConditionExpression: 'enabled = :on' + (failingSinceAtMost ? ' AND failing_since <= :cutoff' : ''),
          ExpressionAttributeNames: stamp.names,
          ExpressionAttributeValues: {
            ':off': false,
            ':on': true,
            ':reason': reason,
            ':at': change.at,
            ...(failingSinceAtMost ? { ':cutoff': failingSinceAtMost } : {}),
            ...stamp.values,
          },
        }),
      ),
    );
  }

  /** Notes a failed attempt: since when the endpoint's deliveries have all failed (undefined: no endpoint). */
  async noteFailure(id: string, at: string): Promise<string | undefined> {
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { id },
          UpdateExpression: 'SET failing_since = if_not_exists(failing_since, :at)',
          ConditionExpression: 'attribute_exists(id)',
          ExpressionAttributeValues: { ':at': at },
          ReturnValues: 'UPDATED_NEW',
        }),
      );
      return out.Attributes?.failing_since as string | undefined;
    } catch (err) {
      if (isConditionFailed(err)) return undefined;
      throw err;
    }
  }

  /** Notes a delivered attempt: the endpoint is no longer failing (written only when it was). */
  async noteSuccess(id: string): Promise<void> {
    await conditionally(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { id },
          UpdateExpression: 'REMOVE failing_since',
          ConditionExpression: 'attribute_exists(failing_since)',
        }),
      ),
    );
  }
}

const INTERNAL = new Set<string>([
  ...STAMP_ATTRIBUTES,
  'created_by_principal',
  'secret',
  'previous_secret',
  'previous_until',
  'failing_since',
  'test_seq',
  'kind',
  'expires_at',
  'stopped_before',
]);

/** The endpoint as GET answers it (never a secret), fields in the contract's order. */
export function toEndpoint(item: Record<string, unknown>): WebhookEndpoint {
  const e = withoutListAttributes<Record<string, unknown>>(item);
  for (const name of INTERNAL) delete e[name];
  return {
    id: e.id as string,
    url: e.url as string,
    event_types: e.event_types as string[],
    description: (e.description as string | null | undefined) ?? null,
    enabled: e.enabled === true,
    disabled_reason: (e.disabled_reason as string | null | undefined) ?? null,
    created_by: e.created_by as string,
    created_at: e.created_at as string,
    updated_at: e.updated_at as string,
  };
}

function stored(item: Record<string, unknown>): StoredEndpoint {
  return {
    endpoint: toEndpoint(item),
    principal: item.created_by_principal as string,
    secret: item.secret as Sealed,
    previousSecret:
      item.previous_secret && typeof item.previous_until === 'string'
        ? { sealed: item.previous_secret as Sealed, until: item.previous_until }
        : undefined,
    failingSince: typeof item.failing_since === 'string' ? item.failing_since : undefined,
    forRun: item.kind === RUN_ENDPOINT_KIND,
    stoppedBefore: typeof item.stopped_before === 'number' ? item.stopped_before : undefined,
  };
}

// ---- deliveries ---------------------------------------------------------------------------
