import {
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { isConditionFailed } from '../../shared/aws/errors.js';
import { decodeCursor, queryAll, queryPage, type PositionedPage } from '../../shared/aws/pagination.js';
import { Unavailable } from '../../shared/errors.js';
import { type Page } from '../../shared/page.js';
import { AGAIN, backoffMs, retry } from '../../shared/retry.js';
import { STAMP_ATTRIBUTES, stampNew, stampUpdate } from '../../shared/events/stamp.js';
import type { Change } from '../../shared/events/types.js';
import type { DecisionStatus, HistoryEntry, VersionDetail, VersionSummary } from './schemas.js';

/** A version as stored: the detail plus its transition history. */
export type VersionItem = VersionDetail & {
  history: HistoryEntry[];
  /** Principals beside the names; absent on versions stored before them. */
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

/** A reserved version number (`nextVersion`), handed back to `create` with the version. */
export interface Reservation {
  readonly version: number;
}

/**
 * A key's entry in the list of decisions (`listDecisions`): its latest version, and the
 * newest approved version below it (null when none), which the store keeps beside it.
 */
export interface DecisionEntry {
  readonly workspace: string;
  readonly key: string;
  readonly version: number;
  readonly status: DecisionStatus;
  readonly published_below: number | null;
  readonly updated_at: string;
}

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

/*
 * The list of decisions (GET /api/decisions), index `keys` (infra/tables.ts). The latest
 * version of each key (the newest one created) is the key's entry: it alone carries
 * `keys_pk` (one value) and `keys_sk` (`<workspace>#<key>`, escaped), and beside its own
 * status `published_below`, the newest approved version below it (absent when none), and
 * `updated_at`, when the entry last changed. The entry is the version itself, not an item
 * of its own, so that a lifecycle action on the latest version (E1 above all) stays the one
 * conditional UpdateItem it was, answering the version as written (ALL_NEW): a transaction
 * of the version and a separate entry would answer nothing, and the version would cost a
 * read more. A creation moves the entry to the new version, and approving or retiring an
 * older version changes `published_below`: each of those is one transaction with the key's
 * counter, which keeps what they need to know without reading the versions:
 * `latest_version` (which version has the entry), `approved_below` (the approved versions
 * below it) and `rev` (one more with each of those writes, so a write made from what it read
 * of the counter is refused when the counter changed since). Every write's conditions hold
 * in the same call as its own, so a refused or failed write changes no entry.
 *
 * Keys whose versions were all created before the list was have no entry and no
 * `latest_version` on their counter: the next write of any of their versions reads the
 * key's versions once and makes the entry in its transaction (`versionsOf`). Versions this
 * code wrote carry `updated_at` (every write sets it), which tells them from those before.
 */
const KEYS_INDEX = 'keys';
const KEYS_PK = 'keys';
const ENTRY_ATTRIBUTES = ['keys_pk', 'keys_sk', 'published_below'] as const;

/**
 * A name as it sorts in the `keys` index: every character up to '%' written `%XX`. The
 * separator '#' then sorts before every character of an escaped name and occurs in none, so
 * entries sort by workspace, then key, and `<workspace>#` is a prefix of that workspace's
 * entries only, whatever characters names hold. (Slugs hold none of these: they are as is.)
 */
const escapeName = (name: string) =>
  name.replace(/[\u0000-\u0025]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
const keysSortKey = (workspace: string, key: string) => `${escapeName(workspace)}#${escapeName(key)}`;
const workspacePrefix = (workspace: string) => `${escapeName(workspace)}#`;

const KEY_FIELDS = [
  'pk',
  'sk',
  'pub_pk',
  'pub_sk',
  'sub_pk',
  'sub_sk',
  ...ENTRY_ATTRIBUTES,
  'updated_at',
  ...STAMP_ATTRIBUTES,
];
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
  nextVersion(workspace: string, key: string): Promise<Reservation>;
  /** Stores the version of `reservation`; it becomes its key's entry in the list unless a newer one is. */
  create(item: VersionItem, change: Change, reservation: Reservation): Promise<void>;
  get(workspace: string, key: string, version: number): Promise<VersionItem | undefined>;
  /**
   * A version, or with "published" the newest published one, its content left unparsed
   * (`parseContent`): what the diff reads, to parse both contents in its turn.
   */
  getUnparsed(workspace: string, key: string, version: number | 'published'): Promise<UnparsedVersion | undefined>;
  /** Versions in ascending order, without content and history. */
  list(workspace: string, key: string, limit: number, cursor: string | undefined): Promise<Page<VersionItem>>;
  /**
   * Each key's entry (its latest version), by workspace then key, of one workspace or all:
   * one read of at most `limit` + 1 entries, however many versions the keys have.
   */
  listDecisions(workspace: string | undefined, limit: number, cursor: string | undefined): Promise<Page<DecisionEntry>>;
  /** The newest published version (approved, not retired). */
  newestPublished(workspace: string, key: string): Promise<VersionItem | undefined>;
  /**
   * Submitted versions placed after `after` (a position), oldest first, without content and
   * history: at most `limit`, and whether the index may hold more after them.
   */
  submittedAfter(after: string, limit: number): Promise<PositionedPage<VersionItem>>;
  /**
   * One conditional write of a status change (with the key's entry when the change moves it);
   * on failure, the current item with the error.
   */
  transition(workspace: string, key: string, version: number, t: TransitionWrite): Promise<TransitionResult>;
}

/** What the counter of a key says about its entry (see the `keys` index above). */
interface CounterState {
  /** The version that has the key's entry; undefined while the key has none. */
  readonly latest: number | undefined;
  /** The approved versions below it. */
  readonly approvedBelow: ReadonlySet<number>;
  readonly rev: number | undefined;
  /**
   * Whether the version that last had the entry was approved when a creation took it over:
   * the guess the next creation makes (it cannot read the status without another call),
   * checked by its write's condition.
   */
  readonly previousApproved: boolean;
}

function counterState(item: Record<string, unknown> | undefined): CounterState {
  const approved = item?.approved_below;
  return {
    latest: typeof item?.latest_version === 'number' ? item.latest_version : undefined,
    approvedBelow: new Set(approved instanceof Set ? [...(approved as Set<unknown>)].map(Number) : []),
    rev: typeof item?.rev === 'number' ? item.rev : undefined,
    previousApproved: item?.previous_approved === true,
  };
}

class CounterReservation implements Reservation {
  constructor(
    readonly version: number,
    readonly counter: CounterState,
  ) {}
}

const newest = (versions: Iterable<number>): number | undefined => {
  let max: number | undefined;
  for (const v of versions) if (max === undefined || v > max) max = v;
  return max;
};
const sameSet = (a: ReadonlySet<number>, b: ReadonlySet<number>) => a.size === b.size && [...a].every((v) => b.has(v));

/** Whether a stored version meets a transition's conditions (what its ConditionExpression says). */
function meets(item: Record<string, unknown>, t: TransitionWrite): boolean {
  if (item.status !== t.from) return false;
  if (t.maxHistory !== undefined && Array.isArray(item.history) && item.history.length >= t.maxHistory) return false;
  return Object.entries(t.differentFrom ?? {}).every(
    ([attr, value]) => item[attr] !== undefined && item[attr] !== value,
  );
}

/** A stored version as the transition leaves it (what an UpdateItem would answer as ALL_NEW). */
function applied(item: Record<string, unknown>, t: TransitionWrite): Record<string, unknown> {
  const next: Record<string, unknown> = { ...item, status: t.to, ...t.set };
  for (const attr of t.remove) delete next[attr];
  next.history = [...(Array.isArray(item.history) ? item.history : []), t.history];
  return next;
}

type Reason = { Code?: string; Item?: Record<string, unknown> };
/** The reasons of a cancelled transaction, one per item (undefined for any other failure). */
function cancellation(err: unknown): Reason[] | undefined {
  const e = err as { name?: string; CancellationReasons?: Reason[] } | undefined;
  return e?.name === 'TransactionCanceledException' ? (e.CancellationReasons ?? []) : undefined;
}
/** The item a failed condition returned (the document client leaves it marshalled). */
const returnedItem = (item: unknown): Record<string, unknown> | undefined =>
  item ? unmarshall(item as Parameters<typeof unmarshall>[0]) : undefined;

/** Tries of one write that meets concurrent writes of the same key (each try reads what changed). */
const WRITE_ATTEMPTS = 25;
/** After a transaction conflict (two writes of one item at once, on AWS), a short random pause. */
const conflictPause = (attempt: number) => backoffMs(Math.min(attempt, 6), { baseMs: 5, maxMs: 200, jitter: 'full' });
const busy = (what: string) => new Unavailable(`Too many concurrent writes of ${what}; try again in a moment`);

/** An UpdateExpression being put together. */
interface Expression {
  readonly sets: string[];
  readonly removes: string[];
  readonly adds: string[];
  readonly names: Record<string, string>;
  readonly values: Record<string, unknown>;
  readonly conditions: string[];
}
const expression = (): Expression => ({
  sets: [],
  removes: [],
  adds: [],
  names: {},
  values: {},
  conditions: [],
});
const updateText = (e: Expression) =>
  [
    e.sets.length ? `SET ${e.sets.join(', ')}` : '',
    e.removes.length ? `REMOVE ${e.removes.join(', ')}` : '',
    e.adds.length ? `ADD ${e.adds.join(', ')}` : '',
  ]
    .filter(Boolean)
    .join(' ');

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** DynamoDB repository for decision versions (TABLES.decisions). */
export class DynamoDecisionStore implements DecisionStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /**
   * Reserves the next version number of a key: an atomic counter, so no two get the same.
   * The counter comes back whole: what the creation needs to know about the key's entry.
   */
  async nextVersion(workspace: string, key: string): Promise<Reservation> {
    const out = await this.once(
      () =>
        this.db.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { pk: partitionKey(workspace, key), sk: COUNTER_SK },
            UpdateExpression: 'ADD last_version :one',
            ExpressionAttributeValues: { ':one': 1 },
            ReturnValues: 'ALL_NEW',
          }),
        ),
      `${workspace}/${key}`,
    );
    return new CounterReservation(Number(out.Attributes?.last_version), counterState(out.Attributes));
  }

  /**
   * Stores the version. A version newer than the key's entry takes the entry over in one
   * transaction: the version with the entry, the entry off the version that had it (whose
   * status is what `published_below` depends on: its condition checks the counter's guess),
   * and the counter. A version older than the entry (a creation that reserved its number
   * before another and finished after it) is one PutItem: the list does not change.
   */
  async create(item: VersionItem, change: Change, reservation: Reservation): Promise<void> {
    const pk = partitionKey(item.workspace, item.key);
    const v = item.version;
    const stored = {
      pk,
      sk: versionSortKey(v),
      ...toStored(item),
      updated_at: item.created_at,
      ...stampNew(change),
    };
    let counter =
      reservation instanceof CounterReservation && reservation.version === v
        ? reservation.counter
        : await this.readCounter(pk);
    /** What a refused try found out about the status of the version with the entry. */
    let previousApproved = counter.previousApproved;
    let conflicted = false;
    const written = await retry(
      async () => {
        conflicted = false;
        if (counter.latest !== undefined && v < counter.latest) {
          await this.once(
            () =>
              this.db.send(
                new PutCommand({
                  TableName: this.tableName,
                  Item: stored,
                  ConditionExpression: 'attribute_not_exists(pk)',
                }),
              ),
            `${item.workspace}/${item.key}`,
          );
          return true;
        }
        const items: TransactItem[] = [];
        const entry = (below: ReadonlySet<number>) => ({
          Put: {
            TableName: this.tableName,
            Item: this.withEntry(stored, item.workspace, item.key, newest(below)),
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        });
        if (counter.latest === undefined) {
          // The key's first entry: its versions before this one (none for version 1) read once.
          const before =
            v === 1
              ? { latest: undefined, approvedBelow: new Set<number>(), latestApproved: false }
              : await this.versionsOf(pk, v);
          const below = new Set(before.approvedBelow);
          if (before.latest !== undefined && before.latestApproved) below.add(before.latest);
          items.push(entry(below), this.counterUpdate(pk, { latest: v, below, previousApproved: false }, undefined));
        } else {
          const latest = counter.latest;
          const below = new Set(counter.approvedBelow);
          if (previousApproved) below.add(latest);
          items.push(
            entry(below),
            {
              Update: {
                TableName: this.tableName,
                Key: { pk, sk: versionSortKey(latest) },
                UpdateExpression: `REMOVE ${ENTRY_ATTRIBUTES.join(', ')}`,
                ConditionExpression: `attribute_exists(keys_pk) AND #status ${previousApproved ? '=' : '<>'} :approved`,
                ExpressionAttributeNames: { '#status': 'status' },
                ExpressionAttributeValues: { ':approved': 'approved' },
                ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
              },
            },
            this.counterUpdate(pk, { latest: v, below, previousApproved }, counter),
          );
        }
        const reasons = await this.transact(items);
        if (!reasons) return true;
        const [own, ...others] = reasons;
        if (own?.Code === 'ConditionalCheckFailed') throw new Error(`version ${v} of ${pk} is already stored`);
        const counterReason = others[others.length - 1];
        if (counterReason?.Code === 'ConditionalCheckFailed') {
          counter = counterState(returnedItem(counterReason.Item));
          previousApproved = counter.previousApproved;
        } else if (others.length === 2 && others[0]?.Code === 'ConditionalCheckFailed') {
          const had = returnedItem(others[0].Item);
          if (had?.keys_pk !== undefined) previousApproved = had.status === 'approved';
          else counter = await this.readCounter(pk);
        } else {
          conflicted = true;
        }
        return AGAIN;
      },
      { attempts: WRITE_ATTEMPTS, delayMs: (attempt) => (conflicted ? conflictPause(attempt) : 0) },
    );
    if (!written.done) throw busy(`${item.workspace}/${item.key}`);
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

  /** One Query of the sparse `keys` index: only the keys' entries are in it. */
  async listDecisions(
    workspace: string | undefined,
    limit: number,
    cursor: string | undefined,
  ): Promise<Page<DecisionEntry>> {
    const prefix = workspace === undefined ? undefined : workspacePrefix(workspace);
    const keyAttributes = ['keys_pk', 'keys_sk', 'pk', 'sk'];
    const names = Object.fromEntries(
      ['workspace', 'key', 'version', 'status', 'published_below', 'updated_at', ...keyAttributes].map((a, i) => [
        `#a${i}`,
        a,
      ]),
    );
    const fits = (k: Record<string, unknown>) =>
      Object.keys(k).length === keyAttributes.length &&
      k.keys_pk === KEYS_PK &&
      typeof k.keys_sk === 'string' &&
      (prefix === undefined || k.keys_sk.startsWith(prefix)) &&
      typeof k.pk === 'string' &&
      k.pk.startsWith('D#') &&
      typeof k.sk === 'string' &&
      k.sk.startsWith('V#');
    const page = await queryPage(
      this.db,
      {
        TableName: this.tableName,
        IndexName: KEYS_INDEX,
        KeyConditionExpression: prefix ? 'keys_pk = :pk AND begins_with(keys_sk, :prefix)' : 'keys_pk = :pk',
        ExpressionAttributeValues: prefix ? { ':pk': KEYS_PK, ':prefix': prefix } : { ':pk': KEYS_PK },
        ProjectionExpression: Object.keys(names).join(', '),
        ExpressionAttributeNames: names,
      },
      { limit, start: decodeCursor(cursor, fits), keyAttributes },
    );
    return {
      items: page.items.map((item) => ({
        workspace: String(item.workspace),
        key: String(item.key),
        version: Number(item.version),
        status: item.status as DecisionStatus,
        published_below: typeof item.published_below === 'number' ? item.published_below : null,
        updated_at: String(item.updated_at),
      })),
      nextCursor: page.nextCursor,
    };
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
   *
   * The write is the version's alone when the key's entry is this version (whose status it
   * is) or does not change: always for submit and reject, and for approve and retire of the
   * latest version, whose `published_below` stays. Approving or retiring an older version
   * changes the approved versions below the latest: that write is refused for want of the
   * entry, and made again with the entry and the counter (`transitionWithEntry`).
   */
  async transition(workspace: string, key: string, version: number, t: TransitionWrite): Promise<TransitionResult> {
    const own = this.transitionExpression(workspace, key, version, t);
    // Only a version this code wrote (`updated_at`) is known to have its key's entry right.
    own.conditions.push('attribute_exists(#updated_at)');
    if (t.published !== undefined) own.conditions.push('attribute_exists(keys_pk)');
    try {
      const out = await this.once(
        () =>
          this.db.send(
            new UpdateCommand({
              TableName: this.tableName,
              Key: { pk: partitionKey(workspace, key), sk: versionSortKey(version) },
              UpdateExpression: updateText(own),
              ConditionExpression: own.conditions.join(' AND '),
              ExpressionAttributeNames: own.names,
              ExpressionAttributeValues: own.values,
              ReturnValues: 'ALL_NEW',
              ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
            }),
          ),
        `${workspace}/${key}`,
      );
      return { ok: true, item: toVersionItem(out.Attributes ?? {}) };
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
      // The document client does not unmarshall the item returned with a failed condition.
      const old = returnedItem((err as { Item?: unknown }).Item);
      if (!old || !meets(old, t)) return { ok: false, current: old ? toVersionItem(old) : undefined };
      return this.transitionWithEntry(workspace, key, version, t, old);
    }
  }

  /**
   * A transition whose version is not the key's entry while the entry depends on it, or that
   * finds no entry yet (a key of versions made before the list): the version's write (made
   * from `old`, its item as the refused write found it, and refused if it changed since),
   * with what it changes of the entry and the counter, in one transaction. The version as
   * the write leaves it is `old` with the transition applied.
   */
  private async transitionWithEntry(
    workspace: string,
    key: string,
    version: number,
    t: TransitionWrite,
    found: Record<string, unknown>,
  ): Promise<TransitionResult> {
    const pk = partitionKey(workspace, key);
    let old = found;
    let conflicted = false;
    const result = await retry<TransitionResult>(
      async () => {
        conflicted = false;
        const counter = await this.readCounter(pk);
        const known =
          counter.latest === undefined
            ? await this.versionsOf(pk)
            : { latest: counter.latest, latestStatus: undefined, approvedBelow: counter.approvedBelow };
        const latest = known.latest ?? version;
        const below = new Set(known.approvedBelow);
        if (version < latest && t.published === true) below.add(version);
        if (version < latest && t.published === false) below.delete(version);

        const own = this.transitionExpression(workspace, key, version, t);
        own.names['#ev_seq'] = 'ev_seq';
        if (typeof old.ev_seq === 'number') {
          own.values[':seen_seq'] = old.ev_seq;
          own.conditions.push('#ev_seq = :seen_seq');
        } else {
          own.conditions.push('attribute_not_exists(#ev_seq)');
        }
        const ownKey = { pk, sk: versionSortKey(version) };
        const items: TransactItem[] = [];
        if (counter.latest === undefined) {
          // The key's first entry, on its latest version.
          if (version === latest) this.addEntry(own, workspace, key, newest(below));
          else items.push(this.entryUpdate(pk, workspace, key, latest, newest(below), t.history.at, known));
          items.push(this.counterUpdate(pk, { latest, below, previousApproved: false }, undefined));
        } else if (t.published === true && version < latest) {
          /*
           * Approving an older version: its number is added to the counter's set (ADD, not a
           * rewrite from what was read), so approvals of other versions of the key do not
           * refuse each other; the entry's `published_below` rises only to a newer version
           * than it holds (its own condition), and stays when a newer one was approved meanwhile.
           */
          const newestKnown = newest(known.approvedBelow);
          if (newestKnown === undefined || version > newestKnown)
            items.push(this.entryRaise(pk, latest, version, t.history.at));
          items.push(this.counterAdd(pk, latest, version));
        } else {
          if (newest(below) !== newest(known.approvedBelow))
            items.push(this.entryUpdate(pk, workspace, key, latest, newest(below), t.history.at, undefined));
          if (!sameSet(below, known.approvedBelow))
            items.push(this.counterUpdate(pk, { latest, below, previousApproved: counter.previousApproved }, counter));
        }
        const ownUpdate = {
          TableName: this.tableName,
          Key: ownKey,
          UpdateExpression: updateText(own),
          ConditionExpression: own.conditions.join(' AND '),
          ExpressionAttributeNames: own.names,
          ExpressionAttributeValues: own.values,
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
        };
        if (items.length === 0) {
          // Nothing of the entry changes (a version of before the list, submitted or rejected).
          try {
            const out = await this.once(
              () => this.db.send(new UpdateCommand({ ...ownUpdate, ReturnValues: 'ALL_NEW' })),
              `${workspace}/${key}`,
            );
            return { ok: true, item: toVersionItem(out.Attributes ?? {}) };
          } catch (err) {
            if (!isConditionFailed(err)) throw err;
            return this.refusedOrAgain((err as { Item?: unknown }).Item, t, (fresh) => (old = fresh));
          }
        }
        const reasons = await this.transact([{ Update: ownUpdate }, ...items]);
        if (!reasons) return { ok: true, item: toVersionItem(applied(old, t)) };
        if (reasons[0]?.Code === 'ConditionalCheckFailed')
          return this.refusedOrAgain(reasons[0].Item, t, (fresh) => (old = fresh));
        conflicted = !reasons.some((r) => r.Code === 'ConditionalCheckFailed');
        return AGAIN;
      },
      { attempts: WRITE_ATTEMPTS, delayMs: (attempt) => (conflicted ? conflictPause(attempt) : 0) },
    );
    if (!result.done) throw busy(`${workspace}/${key}`);
    return result.value;
  }

  /** A refused write of the version: the refusal when its conditions fail, else another try from what it found. */
  private refusedOrAgain(
    returned: unknown,
    t: TransitionWrite,
    seen: (item: Record<string, unknown>) => void,
  ): TransitionResult | typeof AGAIN {
    const fresh = returnedItem(returned);
    if (!fresh || !meets(fresh, t)) return { ok: false, current: fresh ? toVersionItem(fresh) : undefined };
    seen(fresh);
    return AGAIN;
  }

  /** The transition's update of its version, with its conditions (without the entry's). */
  private transitionExpression(workspace: string, key: string, version: number, t: TransitionWrite): Expression {
    const e = expression();
    const stamp = stampUpdate(t.change);
    Object.assign(e.names, { '#status': 'status', '#history': 'history', '#updated_at': 'updated_at' }, stamp.names);
    Object.assign(
      e.values,
      { ':from': t.from, ':to': t.to, ':entry': [t.history], ':empty': [], ':updated_at': t.history.at },
      stamp.values,
    );
    e.sets.push(
      '#status = :to',
      '#history = list_append(if_not_exists(#history, :empty), :entry)',
      '#updated_at = :updated_at',
      stamp.set,
    );
    e.adds.push(stamp.add);
    Object.entries(t.set).forEach(([attr, value], i) => {
      e.names[`#s${i}`] = attr;
      e.values[`:s${i}`] = value;
      e.sets.push(`#s${i} = :s${i}`);
    });
    t.remove.forEach((attr, i) => {
      e.names[`#r${i}`] = attr;
      e.removes.push(`#r${i}`);
    });
    if (t.published === true) {
      e.values[':pub_pk'] = partitionKey(workspace, key);
      e.values[':pub_sk'] = version;
      e.sets.push('pub_pk = :pub_pk', 'pub_sk = :pub_sk');
    } else if (t.published === false) {
      e.removes.push('pub_pk', 'pub_sk');
    }
    if (t.submitted === true) {
      const at = String(t.set.submitted_at);
      e.values[':sub_pk'] = SUBMITTED_PK;
      e.values[':sub_sk'] = submittedSortKey(workspace, key, version, at);
      e.sets.push('sub_pk = :sub_pk', 'sub_sk = :sub_sk');
    } else if (t.submitted === false) {
      e.removes.push('sub_pk', 'sub_sk');
    }
    e.conditions.push('attribute_exists(pk)', '#status = :from');
    if (t.maxHistory !== undefined) {
      e.values[':maxHistory'] = t.maxHistory;
      e.conditions.push('(attribute_not_exists(#history) OR size(#history) < :maxHistory)');
    }
    Object.entries(t.differentFrom ?? {}).forEach(([attr, value], i) => {
      e.names[`#n${i}`] = attr;
      e.values[`:n${i}`] = value;
      e.conditions.push(`attribute_exists(#n${i}) AND #n${i} <> :n${i}`);
    });
    return e;
  }

  /** The item with the key's entry on it. */
  private withEntry(
    item: Record<string, unknown>,
    workspace: string,
    key: string,
    publishedBelow: number | undefined,
  ): Record<string, unknown> {
    return {
      ...item,
      keys_pk: KEYS_PK,
      keys_sk: keysSortKey(workspace, key),
      ...(publishedBelow !== undefined ? { published_below: publishedBelow } : {}),
    };
  }

  /** Adds the key's entry to an update of the version that gets it. */
  private addEntry(e: Expression, workspace: string, key: string, publishedBelow: number | undefined): void {
    Object.assign(e.values, { ':keys_pk': KEYS_PK, ':keys_sk': keysSortKey(workspace, key) });
    e.sets.push('keys_pk = :keys_pk', 'keys_sk = :keys_sk');
    if (publishedBelow !== undefined) {
      e.values[':published_below'] = publishedBelow;
      e.sets.push('published_below = :published_below');
    } else {
      e.removes.push('published_below');
    }
  }

  /**
   * The entry's update on the latest version: its `published_below` (and, for a key's first
   * entry, `first`: the entry itself, on the version found latest with the status it had).
   */
  private entryUpdate(
    pk: string,
    workspace: string,
    key: string,
    latest: number,
    publishedBelow: number | undefined,
    at: string,
    first: { latestStatus?: string } | undefined,
  ): TransactItem {
    const e = expression();
    e.names['#updated_at'] = 'updated_at';
    e.values[':updated_at'] = at;
    e.sets.push('#updated_at = :updated_at');
    if (first) {
      this.addEntry(e, workspace, key, publishedBelow);
      e.names['#status'] = 'status';
      e.values[':latest_status'] = first.latestStatus;
      e.conditions.push('attribute_exists(pk)', 'attribute_not_exists(keys_pk)', '#status = :latest_status');
    } else {
      if (publishedBelow !== undefined) {
        e.values[':published_below'] = publishedBelow;
        e.sets.push('published_below = :published_below');
      } else {
        e.removes.push('published_below');
      }
      e.conditions.push('attribute_exists(keys_pk)');
    }
    return {
      Update: {
        TableName: this.tableName,
        Key: { pk, sk: versionSortKey(latest) },
        UpdateExpression: updateText(e),
        ConditionExpression: e.conditions.join(' AND '),
        ExpressionAttributeNames: e.names,
        ExpressionAttributeValues: e.values,
      },
    };
  }

  /** The entry (on version `latest`) names `version` as published below it, if none newer is named already. */
  private entryRaise(pk: string, latest: number, version: number, at: string): TransactItem {
    return {
      Update: {
        TableName: this.tableName,
        Key: { pk, sk: versionSortKey(latest) },
        UpdateExpression: 'SET published_below = :version, #updated_at = :updated_at',
        ConditionExpression:
          'attribute_exists(keys_pk) AND (attribute_not_exists(published_below) OR published_below < :version)',
        ExpressionAttributeNames: { '#updated_at': 'updated_at' },
        ExpressionAttributeValues: { ':version': version, ':updated_at': at },
      },
    };
  }

  /**
   * `version` joins the approved versions below `latest` on the counter, while `latest` still
   * has the entry; `rev` moves, so a creation that read the set before writes it again.
   */
  private counterAdd(pk: string, latest: number, version: number): TransactItem {
    return {
      Update: {
        TableName: this.tableName,
        Key: { pk, sk: COUNTER_SK },
        UpdateExpression: 'ADD approved_below :version, rev :one',
        ConditionExpression: 'latest_version = :latest',
        ExpressionAttributeValues: { ':version': new Set([version]), ':one': 1, ':latest': latest },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    };
  }

  /**
   * The counter's update for a new state of the entry: refused when the counter changed since
   * `read` (its `rev`), or, with no `read`, when another write made the key's first entry.
   */
  private counterUpdate(
    pk: string,
    next: { latest: number; below: ReadonlySet<number>; previousApproved: boolean },
    read: CounterState | undefined,
  ): TransactItem {
    const e = expression();
    Object.assign(e.values, { ':latest': next.latest, ':previous_approved': next.previousApproved, ':one': 1 });
    e.sets.push('latest_version = :latest', 'previous_approved = :previous_approved');
    e.adds.push('rev :one');
    if (next.below.size > 0) {
      e.values[':below'] = new Set(next.below);
      e.sets.push('approved_below = :below');
    } else {
      e.removes.push('approved_below');
    }
    if (read) {
      if (read.rev !== undefined) {
        e.values[':rev'] = read.rev;
        e.conditions.push('rev = :rev');
      } else {
        e.conditions.push('attribute_not_exists(rev)');
      }
    } else {
      // A key of versions made before the list may have lost nothing of its counter but never
      // had one in a test's seeded data: the next reservation must not reuse a number.
      e.sets.push('last_version = if_not_exists(last_version, :latest)');
      e.conditions.push('attribute_not_exists(latest_version)');
    }
    return {
      Update: {
        TableName: this.tableName,
        Key: { pk, sk: COUNTER_SK },
        UpdateExpression: updateText(e),
        ConditionExpression: e.conditions.join(' AND '),
        ExpressionAttributeValues: e.values,
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    };
  }

  /** The counter, read consistently. */
  private async readCounter(pk: string): Promise<CounterState> {
    const out = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: { pk, sk: COUNTER_SK }, ConsistentRead: true }),
    );
    return counterState(out.Item);
  }

  /**
   * What a key of versions made before the list needs for its first entry, from its
   * versions (below `before`, when given), read once, consistently: which is the latest and
   * its status, and the approved ones below it. Every version's status read here is only
   * changed by a write that makes the same first entry (the counter's condition lets one of
   * them through), so it still holds when the entry is written.
   */
  private async versionsOf(
    pk: string,
    before?: number,
  ): Promise<{
    latest: number | undefined;
    latestStatus?: string;
    latestApproved: boolean;
    approvedBelow: Set<number>;
  }> {
    const items = await queryAll(this.db, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :v)',
      ExpressionAttributeValues: { ':pk': pk, ':v': 'V#' },
      ProjectionExpression: '#version, #status',
      ExpressionAttributeNames: { '#version': 'version', '#status': 'status' },
      ConsistentRead: true,
    });
    const versions = items
      .map((i) => ({ version: Number(i.version), status: String(i.status) }))
      .filter((i) => before === undefined || i.version < before);
    const latest = newest(versions.map((i) => i.version));
    const latestStatus = versions.find((i) => i.version === latest)?.status;
    return {
      latest,
      latestStatus,
      latestApproved: latestStatus === 'approved',
      approvedBelow: new Set(
        versions.filter((i) => i.status === 'approved' && i.version !== latest).map((i) => i.version),
      ),
    };
  }

  /** Sends a transaction: undefined when written, the reasons when cancelled. */
  private async transact(items: TransactItem[]): Promise<Reason[] | undefined> {
    try {
      await this.db.send(new TransactWriteCommand({ TransactItems: items }));
      return undefined;
    } catch (err) {
      const reasons = cancellation(err);
      if (!reasons) throw err;
      return reasons;
    }
  }

  /**
   * One write of one item, tried again when it met a transaction writing the same item at
   * that moment (on AWS: the version with the entry and the counter are in transactions).
   */
  private async once<T>(send: () => Promise<T>, what: string): Promise<T> {
    const sent = await retry(
      async () => {
        try {
          return await send();
        } catch (err) {
          if ((err as { name?: string }).name === 'TransactionConflictException') return AGAIN;
          throw err;
        }
      },
      { attempts: WRITE_ATTEMPTS, delayMs: conflictPause },
    );
    if (!sent.done) throw busy(what);
    return sent.value;
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
