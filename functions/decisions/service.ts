import { setImmediate as eventLoopTurn } from 'node:timers/promises';
import type { DomainEventType } from '../../shared/events/types.js';
import type { Caller } from '../../shared/auth/caller.js';
import type { Page } from '../../shared/page.js';
import { type Clock, systemClock } from '../../shared/clock.js';
import { gate } from '../../shared/concurrency.js';
import { canonicalJson, sha256Hex } from '../../shared/crypto.js';
import { Conflict, Forbidden, Invalid, NotFound, valueError } from '../../shared/errors.js';
import { versionDiff } from './diff.js';
import type {
  CreateVersionRequest,
  DecisionStatus,
  DecisionSummary,
  HistoryEntry,
  VersionDetail,
  VersionDiff,
  VersionSummary,
} from './schemas.js';
import {
  type DecisionEntry,
  type DecisionStore,
  parseContent,
  toVersionDetail,
  toVersionSummary,
  type TransitionWrite,
  type UnparsedVersion,
  type VersionItem,
} from './store.js';

/**
 * A version is one DynamoDB item (at most 400 KB): its content, and its history of at
 * most MAX_HISTORY transitions with notes of at most 1000 characters, must fit in it.
 */
export const MAX_CONTENT_BYTES = 200 * 1024;
export const MAX_HISTORY = 100;
/**
 * Diffs that parse and compare at once in one process. Bounded, a diff of the largest
 * contents is still tens of ms of CPU (parsing both versions, then comparing), in pieces the
 * event loop cannot interleave with other requests; locally, where every group shares one
 * process, 8 at once held `GET /api/health/ping` at hundreds of ms. In turns, another
 * request meets one such piece of diff work, not one of each diff under way (fair
 * use). Only the CPU takes turns: the reads are made at once, so a store that does not
 * answer delays no other diff than its own (its 503 stays within the contract's 10 s). On
 * AWS a Lambda instance serves one request at a time: there is never a turn to wait for.
 */
export const DIFFS_AT_ONCE = 1;
export const diffTurns = gate(DIFFS_AT_ONCE);

export type Action = 'submit' | 'approve' | 'reject' | 'retire';

interface TransitionRule {
  readonly from: DecisionStatus;
  readonly to: DecisionStatus;
  readonly set: (by: Caller, at: string) => Record<string, unknown>;
  readonly remove: readonly string[];
  /** The caller must be neither the author nor the submitter (four-eyes rule). */
  readonly fourEyes?: boolean;
  readonly published?: boolean;
  /** Whether the version is in (true) or leaves (false) the approvers' inbox. */
  readonly submitted?: boolean;
}

/** The review lifecycle: draft → submitted → approved → retired, and submitted → draft. */
const RULES: Record<Action, TransitionRule> = {
  submit: {
    from: 'draft',
    to: 'submitted',
    set: (by, at) => ({ submitted_by: by.name, submitted_by_principal: by.principal, submitted_at: at }),
    remove: [],
    submitted: true,
  },
  approve: {
    from: 'submitted',
    to: 'approved',
    set: (by, at) => ({ approved_by: by.name, approved_by_principal: by.principal, approved_at: at }),
    remove: [],
    fourEyes: true,
    published: true,
    submitted: false,
  },
  reject: {
    from: 'submitted',
    to: 'draft',
    set: () => ({}),
    remove: ['submitted_by', 'submitted_by_principal', 'submitted_at'],
    submitted: false,
  },
  retire: {
    from: 'approved',
    to: 'retired',
    set: () => ({}),
    remove: [],
    published: false,
  },
};

const describe = (workspace: string, key: string, version?: number) =>
  version === undefined ? `${workspace}/${key}` : `version ${version} of ${workspace}/${key}`;

/** The domain event of each lifecycle action (docs/events-and-webhooks.md). */
const EVENT_OF = {
  submit: 'decision.version.submitted',
  approve: 'decision.version.approved',
  reject: 'decision.version.rejected',
  retire: 'decision.version.retired',
} as const satisfies Record<Action, DomainEventType>;

/**
 * A key's entry as the list answers it. Its published version is the newest approved one,
 * as `published` finds it in the `published` index: the latest version itself when it is
 * approved, else the newest approved below it, which the store keeps on the entry (from the
 * `published` side of each transition: RULES above).
 */
const toDecisionSummary = (entry: DecisionEntry): DecisionSummary => ({
  workspace: entry.workspace,
  key: entry.key,
  latest_version: entry.version,
  latest_status: entry.status,
  published_version: entry.status === 'approved' ? entry.version : entry.published_below,
  updated_at: entry.updated_at,
});

/** Decision versions and their review lifecycle (E1). */
export class DecisionService {
  constructor(
    private readonly store: DecisionStore,
    /** The time the service reads: the system's unless given. */
    private readonly clock: Clock = systemClock,
  ) {}

  async createVersion(
    workspace: string,
    key: string,
    req: CreateVersionRequest,
    caller: Caller,
  ): Promise<VersionDetail> {
    const canonical = canonicalJson(req.content);
    if (Buffer.byteLength(canonical, 'utf8') > MAX_CONTENT_BYTES) {
      const error = `content is larger than ${MAX_CONTENT_BYTES / 1024} KiB as canonical JSON`;
      throw new Invalid([valueError(['body', 'content'], error, null)]);
    }
    const reservation = await this.store.nextVersion(workspace, key);
    const version = reservation.version;
    const at = this.clock.iso();
    const item: VersionItem = {
      workspace,
      key,
      version,
      content_sha: sha256Hex(canonical),
      status: 'draft',
      notes: req.notes ?? null,
      created_by: caller.name,
      created_by_principal: caller.principal,
      created_at: at,
      submitted_by: null,
      submitted_at: null,
      approved_by: null,
      approved_at: null,
      source_instance: req.source_instance ?? null,
      source_version: req.source_version ?? null,
      content: req.content,
      history: [{ from: null, to: 'draft', action: 'create', by: caller.name, at, notes: req.notes ?? null }],
    };
    await this.store.create(item, { type: 'decision.version.created', actor: caller.name, at }, reservation);
    return toVersionDetail(item);
  }

  /**
   * Every decision (a workspace's key with versions), by workspace then key: its latest
   * version and status, and its published version. One read of the store's list, whatever
   * the number of versions; a key whose versions all predate the list shows from its next
   * write on (store.ts, index `keys`).
   */
  async listDecisions(
    workspace: string | undefined,
    limit: number,
    cursor: string | undefined,
  ): Promise<Page<DecisionSummary>> {
    const page = await this.store.listDecisions(workspace, limit, cursor);
    return { items: page.items.map(toDecisionSummary), nextCursor: page.nextCursor };
  }

  async listVersions(
    workspace: string,
    key: string,
    limit: number,
    cursor: string | undefined,
  ): Promise<Page<VersionSummary>> {
    const page = await this.store.list(workspace, key, limit, cursor);
    if (page.items.length === 0 && cursor === undefined)
      throw new NotFound(`No versions of ${describe(workspace, key)}`);
    return { items: page.items.map(toVersionSummary), nextCursor: page.nextCursor };
  }

  async getVersion(workspace: string, key: string, version: number): Promise<VersionDetail> {
    return toVersionDetail(await this.load(workspace, key, version));
  }

  async published(workspace: string, key: string): Promise<VersionDetail> {
    const item = await this.store.newestPublished(workspace, key);
    if (!item) throw new NotFound(`No approved version of ${describe(workspace, key)}`);
    return toVersionDetail(item);
  }

  async history(workspace: string, key: string, version: number): Promise<HistoryEntry[]> {
    return (await this.load(workspace, key, version)).history ?? [];
  }

  /**
   * What changed between a version and the published one (`against` "published", the
   * default) or another version: its content's changes as JSON Pointer paths with old and
   * new values. With nothing published, `from` is null and the content is one `add` at "".
   * The answer is bounded (`versionDiff`: 1,000 changes, 1 MiB): past a bound it says
   * `truncated` and the comparison stops, so the work is not what the stored content could
   * amplify into (fair use). Both versions are read with their content unparsed;
   * the parses and the comparison take their turn (`diffTurns`), and between them this
   * gives the event loop over to what waits.
   */
  async diff(workspace: string, key: string, version: number, against: 'published' | number): Promise<VersionDiff> {
    const [to, from] = await Promise.all([
      this.store.getUnparsed(workspace, key, version),
      this.store.getUnparsed(workspace, key, against),
    ]);
    if (!to) throw new NotFound(`No ${describe(workspace, key, version)}`);
    if (!from && against !== 'published') throw new NotFound(`No ${describe(workspace, key, against)}`);
    return diffTurns(async () => {
      const compared = async (stored: UnparsedVersion) => {
        const item = parseContent(stored);
        await eventLoopTurn();
        return { ref: { version: item.version, content_sha: item.content_sha }, content: item.content ?? null };
      };
      return versionDiff(from ? await compared(from) : null, await compared(to));
    });
  }

  /**
   * Moves a version through the lifecycle with one conditional write. When the write is
   * refused, the item returned with the refusal says why, in the contract's order:
   * missing (404), then wrong state (409), then the four-eyes rule (403).
   */
  async transition(
    action: Action,
    workspace: string,
    key: string,
    version: number,
    notes: string | null | undefined,
    caller: Caller,
  ): Promise<VersionSummary> {
    const rule = RULES[action];
    const at = this.clock.iso();
    const write: TransitionWrite = {
      from: rule.from,
      to: rule.to,
      set: { ...rule.set(caller, at), ...(notes != null ? { notes } : {}) },
      remove: rule.remove,
      history: { from: rule.from, to: rule.to, action, by: caller.name, at, notes: notes ?? null },
      // Four-eyes by principal: a version whose author or submitter was
      // recorded by name only cannot be told apart from the caller, so it is refused.
      ...(rule.fourEyes
        ? { differentFrom: { created_by_principal: caller.principal, submitted_by_principal: caller.principal } }
        : {}),
      maxHistory: MAX_HISTORY,
      ...(rule.published !== undefined ? { published: rule.published } : {}),
      ...(rule.submitted !== undefined ? { submitted: rule.submitted } : {}),
      change: { type: EVENT_OF[action], actor: caller.name, at },
    };
    const result = await this.store.transition(workspace, key, version, write);
    if (result.ok) return toVersionSummary(result.item);
    const current = result.current;
    if (!current) throw new NotFound(`No ${describe(workspace, key, version)}`);
    if (current.status !== rule.from) {
      throw new Conflict(
        `Cannot ${action} ${describe(workspace, key, version)}: it is ${current.status}, not ${rule.from}`,
      );
    }
    const authored =
      rule.fourEyes === true &&
      [current.created_by_principal, current.submitted_by_principal].some((p) => !p || p === caller.principal);
    if (!authored && (current.history?.length ?? 0) >= MAX_HISTORY) {
      throw new Conflict(
        `${describe(workspace, key, version)} has reached ${MAX_HISTORY} transitions; create a new version`,
      );
    }
    if (!current.created_by_principal || !current.submitted_by_principal) {
      throw new Forbidden(
        `Four-eyes rule: the author or submitter of ${describe(workspace, key, version)} was recorded before principals were; reject it and submit it again, or create a new version`,
      );
    }
    throw new Forbidden(
      `Four-eyes rule: you authored or submitted ${describe(workspace, key, version)}; another person must approve it`,
    );
  }

  private async load(workspace: string, key: string, version: number): Promise<VersionItem> {
    const item = await this.store.get(workspace, key, version);
    if (!item) throw new NotFound(`No ${describe(workspace, key, version)}`);
    return item;
  }
}
