import {
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { isConditionFailed } from '../../shared/aws/errors.js';
import { decodeCursor, queryPage, type PositionedPage } from '../../shared/aws/pagination.js';
import { type Page } from '../../shared/page.js';
import { STAMP_ATTRIBUTES, stampNew, stampUpdate } from '../../shared/events/stamp.js';
import type { Change } from '../../shared/events/types.js';
import type { DecisionStatus, HistoryEntry, VersionDetail, VersionSummary } from './schemas.js';

/** A version as stored: the detail plus its transition history. */
export type VersionItem = VersionDetail & {
  history: HistoryEntry[];
  /** Principals beside the names (API.md §1); absent on versions stored before them. */
  created_by_principal?: string;
  submitted_by_principal?: string | null;
  approved_by_principal?: string | null;
};

/** What a transition writes, and what must hold for it to be written. */
export interface TransitionWrite {
  readonly from: DecisionStatus;
  readonly to: DecisionStatus;
  readonly set: Record<string, unknown>;
  readonly remove: readonly string[];
  readonly history: HistoryEntry;
  /** Attributes that must exist and differ from the given value. */
  readonly differentFrom?: Record<string, string>;
  /** Add to (true) or remove from (false) the `published` index. */
  readonly published?: boolean;
  /** Add to (true) or remove from (false) the sparse `submitted` index (the approvers' inbox). */
  readonly submitted?: boolean;
  /** Refuse the write when the history already holds this many entries. */
  readonly maxHistory?: number;
  /** The change, stamped on the version for its domain event. */
  readonly change: Change;
}

export type TransitionResult = { ok: true; item: VersionItem } | { ok: false; current: VersionItem | undefined };

const SUMMARY_ATTRIBUTES = [
  'workspace',
  'key',
  'version',
  'content_sha',
  'status',
  'notes',
  'created_by',
  'created_at',
  'submitted_by',
  'submitted_at',
  'approved_by',
  'approved_at',
  'source_instance',
  'source_version',
];

const partitionKey = (workspace: string, key: string) => `D#${workspace}#${key}`;
const versionSortKey = (version: number) => `V#${String(version).padStart(10, '0')}`;
const COUNTER_SK = '#COUNTER';

/**
 * Index `submitted` (infra/tables.ts): only submitted versions carry `sub_pk` (one value)
 * and `sub_sk` (`<submitted_at>#d#<workspace>#<key>#<version>`), oldest first.
 */
const SUBMITTED_PK = 'submitted';
const submittedSortKey = (workspace: string, key: string, version: number, at: string) =>
  `${at}#d#${workspace}#${key}#${String(version).padStart(10, '0')}`;

const KEY_FIELDS = ['pk', 'sk', 'pub_pk', 'pub_sk', 'sub_pk', 'sub_sk', ...STAMP_ATTRIBUTES];
/**
 * Content is stored as JSON text: any JSON value (huge or precise numbers, empty keys,
 * deep nesting) round-trips, where DynamoDB's native types would refuse some.
 */
function toStored(item: VersionItem): Record<string, unknown> {
  const { content, ...rest } = item;
  return { ...rest, content_json: JSON.stringify(content ?? null) };
}

/**
 * A stored version whose content is still its JSON text (`content_json`): `parseContent`
 * makes it a VersionItem when its reader is ready to spend the parse, which for the largest
 * contents is tens of ms of CPU in one piece.
 */
export type UnparsedVersion = Omit<VersionItem, 'content'> & { content_json?: string };

/** A stored version with the keys and the change stamp left out, its content unparsed. */
function toUnparsedVersion(item: Record<string, unknown>): UnparsedVersion {
  const copy = { ...item };
  for (const f of KEY_FIELDS) delete copy[f];
  return copy as UnparsedVersion;
}

/** The version with its content parsed. */
export function parseContent(version: UnparsedVersion): VersionItem {
  if (typeof version.content_json !== 'string') return version as VersionItem;
  const { content_json: json, ...rest } = version;
  return { ...rest, content: JSON.parse(json) as unknown };
}

/** A stored version as the service sees it: content parsed, keys and the change stamp left out. */
export function toVersionItem(item: Record<string, unknown>): VersionItem {
  return parseContent(toUnparsedVersion(item));
}

/** Decision versions, as the service reads and writes them. */
export interface DecisionStore {
  /** Reserves the next version number of a key (no two callers get the same). */
  nextVersion(workspace: string, key: string): Promise<number>;
  create(item: VersionItem, change: Change): Promise<void>;
  get(workspace: string, key: string, version: number): Promise<VersionItem | undefined>;
  /**
   * A version, or with "published" the newest published one, its content left unparsed
   * (`parseContent`): what the diff reads, to parse both contents in its turn.
   */
  getUnparsed(workspace: string, key: string, version: number | 'published'): Promise<UnparsedVersion | undefined>;
  /** Versions in ascending order, without content and history. */
  list(workspace: string, key: string, limit: number, cursor: string | undefined): Promise<Page<VersionItem>>;
  /** The newest published version (approved, not retired). */
  newestPublished(workspace: string, key: string): Promise<VersionItem | undefined>;
  /**
   * Submitted versions placed after `after` (a position), oldest first, without content and
   * history: at most `limit`, and whether the index may hold more after them.
   */
  submittedAfter(after: string, limit: number): Promise<PositionedPage<VersionItem>>;
  /** One conditional write of a status change; on failure, the current item with the error. */
  transition(workspace: string, key: string, version: number, t: TransitionWrite): Promise<TransitionResult>;
}

/** DynamoDB repository for decision versions (TABLES.decisions). */
export class DynamoDecisionStore implements DecisionStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /** Reserves the next version number of a key: an atomic counter, so no two get the same. */
  async nextVersion(workspace: string, key: string): Promise<number> {
    const out = await this.db.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { pk: partitionKey(workspace, key), sk: COUNTER_SK },
        UpdateExpression: 'ADD last_version :one',
        ExpressionAttributeValues: { ':one': 1 },
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    return Number(out.Attributes?.last_version);
  }

  async create(item: VersionItem, change: Change): Promise<void> {
    await this.db.send(
      new PutCommand({
        TableName: this.tableName,
        Item: {
          pk: partitionKey(item.workspace, item.key),
          sk: versionSortKey(item.version),
          ...toStored(item),
          ...stampNew(change),
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
  }

  async get(workspace: string, key: string, version: number): Promise<VersionItem | undefined> {
    const item = await this.getUnparsed(workspace, key, version);
    return item ? parseContent(item) : undefined;
  }

  async getUnparsed(
    workspace: string,
    key: string,
    version: number | 'published',
  ): Promise<UnparsedVersion | undefined> {
    if (version === 'published') {
      const out = await this.db.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: 'published',
          KeyConditionExpression: 'pub_pk = :pk',
          ExpressionAttributeValues: { ':pk': partitionKey(workspace, key) },
          ScanIndexForward: false,
          Limit: 1,
        }),
      );
      const item = out.Items?.[0];
      return item ? toUnparsedVersion(item) : undefined;
    }
    const out = await this.db.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: partitionKey(workspace, key), sk: versionSortKey(version) },
      }),
    );
    return out.Item ? toUnparsedVersion(out.Item) : undefined;
  }

  /** Versions in ascending order, without content and history. */
  async list(workspace: string, key: string, limit: number, cursor: string | undefined): Promise<Page<VersionItem>> {
    const pk = partitionKey(workspace, key);
    // The key is projected too: the next cursor is made from the page's last item.
    const names = Object.fromEntries([...SUMMARY_ATTRIBUTES, 'pk', 'sk'].map((a, i) => [`#a${i}`, a]));
    const page = await queryPage(
      this.db,
      {
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :v)',
        ExpressionAttributeValues: { ':pk': pk, ':v': 'V#' },
        ProjectionExpression: Object.keys(names).join(', '),
        ExpressionAttributeNames: names,
      },
      {
        limit,
        start: decodeCursor(
          cursor,
          (k) => Object.keys(k).length === 2 && k.pk === pk && typeof k.sk === 'string' && k.sk.startsWith('V#'),
        ),
        keyAttributes: ['pk', 'sk'],
      },
    );
    return { items: page.items.map(toVersionItem), nextCursor: page.nextCursor };
  }

  /** The newest version in the `published` index (approved, not retired). */
  async newestPublished(workspace: string, key: string): Promise<VersionItem | undefined> {
    const item = await this.getUnparsed(workspace, key, 'published');
    return item ? parseContent(item) : undefined;
  }

  async submittedAfter(after: string, limit: number): Promise<PositionedPage<VersionItem>> {
    const names = Object.fromEntries(
      [...SUMMARY_ATTRIBUTES, 'created_by_principal', 'submitted_by_principal', 'sub_sk'].map((a, i) => [`#a${i}`, a]),
    );
    const out = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: 'submitted',
        // DynamoDB takes no empty string in a key condition: from the start, the partition alone.
        KeyConditionExpression: after ? 'sub_pk = :pk AND sub_sk > :after' : 'sub_pk = :pk',
        ExpressionAttributeValues: after ? { ':pk': SUBMITTED_PK, ':after': after } : { ':pk': SUBMITTED_PK },
        ProjectionExpression: Object.keys(names).join(', '),
        ExpressionAttributeNames: names,
        Limit: limit,
      }),
    );
    return {
      items: (out.Items ?? []).map((item) => ({ position: String(item.sub_sk), item: toVersionItem(item) })),
      more: out.LastEvaluatedKey !== undefined,
    };
  }

  /**
   * One conditional write: the status moves only if it is still `from` and the
   * `differentFrom` conditions hold. On failure the current item comes back with the error,
   * so the caller can tell "missing" from "wrong state" without another read.
   */
  async transition(workspace: string, key: string, version: number, t: TransitionWrite): Promise<TransitionResult> {
    const stamp = stampUpdate(t.change);
    const names: Record<string, string> = { '#status': 'status', '#history': 'history', ...stamp.names };
    const values: Record<string, unknown> = {
      ':from': t.from,
      ':to': t.to,
      ':entry': [t.history],
      ':empty': [],
      ...stamp.values,
    };
    const sets = ['#status = :to', '#history = list_append(if_not_exists(#history, :empty), :entry)', stamp.set];
    const removes: string[] = [];
    Object.entries(t.set).forEach(([attr, value], i) => {
      names[`#s${i}`] = attr;
      values[`:s${i}`] = value;
      sets.push(`#s${i} = :s${i}`);
    });
    t.remove.forEach((attr, i) => {
      names[`#r${i}`] = attr;
      removes.push(`#r${i}`);
    });
    if (t.published === true) {
      values[':pub_pk'] = partitionKey(workspace, key);
      values[':pub_sk'] = version;
      sets.push('pub_pk = :pub_pk', 'pub_sk = :pub_sk');
    } else if (t.published === false) {
      removes.push('pub_pk', 'pub_sk');
    }
    if (t.submitted === true) {
      const at = String(t.set.submitted_at);
      values[':sub_pk'] = SUBMITTED_PK;
      values[':sub_sk'] = submittedSortKey(workspace, key, version, at);
      sets.push('sub_pk = :sub_pk', 'sub_sk = :sub_sk');
    } else if (t.submitted === false) {
      removes.push('sub_pk', 'sub_sk');
    }
    const conditions = ['#status = :from'];
    if (t.maxHistory !== undefined) {
      values[':maxHistory'] = t.maxHistory;
      conditions.push('(attribute_not_exists(#history) OR size(#history) < :maxHistory)');
    }
    Object.entries(t.differentFrom ?? {}).forEach(([attr, value], i) => {
      names[`#n${i}`] = attr;
      values[`:n${i}`] = value;
      conditions.push(`attribute_exists(#n${i}) AND #n${i} <> :n${i}`);
    });
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: partitionKey(workspace, key), sk: versionSortKey(version) },
          UpdateExpression: `SET ${sets.join(', ')}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''} ADD ${stamp.add}`,
          ConditionExpression: `attribute_exists(pk) AND ${conditions.join(' AND ')}`,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { ok: true, item: toVersionItem(out.Attributes ?? {}) };
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
      // The document client does not unmarshall the item returned with a failed condition.
      const old = (err as { Item?: Record<string, unknown> }).Item;
      return {
        ok: false,
        current: old ? toVersionItem(unmarshall(old as Parameters<typeof unmarshall>[0])) : undefined,
      };
    }
  }
}

/** A version as lists and lifecycle actions answer it: no content, no history. */
export const toVersionSummary = (item: VersionItem): VersionSummary => ({
  workspace: item.workspace,
  key: item.key,
  version: item.version,
  content_sha: item.content_sha,
  status: item.status,
  notes: item.notes ?? null,
  created_by: item.created_by,
  created_at: item.created_at,
  submitted_by: item.submitted_by ?? null,
  submitted_at: item.submitted_at ?? null,
  approved_by: item.approved_by ?? null,
  approved_at: item.approved_at ?? null,
  source_instance: item.source_instance ?? null,
  source_version: item.source_version ?? null,
});

/** A version as GET answers it: the summary and its content; also its domain events' data. */
export const toVersionDetail = (item: VersionItem): VersionDetail => ({
  ...toVersionSummary(item),
  content: item.content ?? null,
});
