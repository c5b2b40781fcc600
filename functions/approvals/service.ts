import type { Caller } from '../../shared/auth/caller.js';
import { type Clock, systemClock } from '../../shared/clock.js';
import { decodeCursor, encodeCursor, type Positioned, type PositionedPage } from '../../shared/aws/pagination.js';
import { type Page } from '../../shared/page.js';
import type { RunStore } from '../crews/runs/run-store.js';
import type { DecisionStore } from '../decisions/store.js';
import type { Approval, ApprovalsQuery, Me } from './schemas.js';

/** The role that decides decision versions (docs/identity-and-keys.md). */
const APPROVER = 'approver';

/** The most roles whose waiting steps one inbox reads (a token may carry many groups). */
export const MAX_INBOX_ROLES = 50;

/** Where the inbox reads: the sparse indexes of submitted versions and of waiting steps. */
export interface InboxSources {
  readonly decisions: Pick<DecisionStore, 'submittedAfter'>;
  readonly runs: Pick<RunStore, 'waitingAfter'>;
}

/** One sparse index read oldest first, the items the caller may decide, page by page. */
type Source = () => Promise<Positioned<Approval> | undefined>;

/**
 * Who the caller is, and what waits for the caller's decision (docs/reviewing.md): decision
 * versions and crew approval steps, merged oldest first from sparse indexes, so the cost
 * follows what waits, never the versions or runs that do not.
 */
export class ApprovalService {
  constructor(
    private readonly sources: InboxSources,
    /** What an approval step's expiry is compared with: an expired step is no longer listed. */
    private readonly clock: Clock = systemClock,
  ) {}

  me(caller: Caller): Me {
    return {
      name: caller.name,
      principal: caller.principal,
      roles: [...caller.roles].sort(),
      credential: caller.via,
      session: caller.via === 'bearer',
    };
  }

  /**
   * The caller's inbox: what it may decide right now, oldest first. Each source reads its
   * index after the cursor's position (all positions share one order: `<time>#<kind>#<id>`),
   * the heads are merged, and the next cursor is the last answered position.
   */
  async list(caller: Caller, query: ApprovalsQuery): Promise<Page<Approval>> {
    const after = decodeCursor(query.cursor, (k) => Object.keys(k).length === 1 && isPosition(k.after));
    const start = (after?.after as string | undefined) ?? '';
    const batch = query.limit + 1;
    const sources: Source[] = [];
    if (query.kind !== 'crew_step' && caller.roles.has(APPROVER)) {
      sources.push(
        this.source(start, batch, async (from, n) => {
          const found = await this.sources.decisions.submittedAfter(from, n);
          const items = found.items.map(({ position, item }) => ({
            position,
            item:
              isPrincipal(item.created_by_principal) &&
              isPrincipal(item.submitted_by_principal) &&
              item.created_by_principal !== caller.principal &&
              item.submitted_by_principal !== caller.principal
                ? ({
                    kind: 'decision_version',
                    workspace: item.workspace,
                    key: item.key,
                    version: item.version,
                    created_by: item.created_by,
                    submitted_by: item.submitted_by ?? '',
                    submitted_at: item.submitted_at ?? '',
                    content_sha: item.content_sha,
                    notes: item.notes ?? null,
                  } satisfies Approval)
                : undefined,
          }));
          return { items, more: found.more };
        }),
      );
    }
    if (query.kind !== 'decision_version') {
      for (const role of [...caller.roles].sort().slice(0, MAX_INBOX_ROLES)) {
        sources.push(
          this.source(start, batch, async (from, n) => {
            const found = await this.sources.runs.waitingAfter(role, from, n);
            const items = found.items.map(({ position, item: run }) => {
              const step = run.waiting;
              const decidable =
                step !== undefined &&
                run.status === 'waiting' &&
                run.created_by_principal !== caller.principal &&
                Date.parse(step.expires_at) > this.clock.now();
              return {
                position,
                item: decidable
                  ? ({
                      kind: 'crew_step',
                      correlation_id: run.correlation_id,
                      step_id: step.step_id,
                      template_id: run.template_id,
                      template_name: run.template_name ?? run.template_id,
                      prompt: step.prompt,
                      role: step.role,
                      started_by: run.created_by,
                      waiting_since: step.since,
                      expires_at: step.expires_at,
                    } satisfies Approval)
                  : undefined,
              };
            });
            return { items, more: found.more };
          }),
        );
      }
    }
    const heads = await Promise.all(sources.map((next) => next()));
    const items: Positioned<Approval>[] = [];
    while (items.length < batch) {
      let first = -1;
      heads.forEach((head, i) => {
        if (head && (first < 0 || head.position < heads[first]!.position)) first = i;
      });
      if (first < 0) break;
      items.push(heads[first]!);
      heads[first] = await sources[first]!();
    }
    const more = items.length > query.limit;
    const page = items.slice(0, query.limit);
    return {
      items: page.map((p) => p.item),
      nextCursor: more ? encodeCursor({ after: page[page.length - 1]!.position }) : undefined,
    };
  }

  /**
   * A source reading `read` (an index after a position) `batch` items at a time, handing
   * out the decidable ones (those `read` maps to an item) one by one, in the index's order,
   * until a read says the index holds no more (a short read is not the end: DynamoDB stops a
   * Query at 1 MB).
   */
  private source(
    start: string,
    batch: number,
    read: (after: string, limit: number) => Promise<PositionedPage<Approval | undefined>>,
  ): Source {
    let after = start;
    let buffered: Positioned<Approval>[] = [];
    let exhausted = false;
    return async () => {
      while (buffered.length === 0 && !exhausted) {
        const found = await read(after, batch);
        // An empty read ends the source even when the store says more may follow: the next
        // read would start at the same position. The stores' Queries have no filter, so a
        // read stopped early (1 MB) always holds at least one item; a filter added to one
        // would have to carry its own position on.
        exhausted = !found.more || found.items.length === 0;
        if (found.items.length > 0) after = found.items[found.items.length - 1]!.position;
        buffered = found.items.filter((f): f is Positioned<Approval> => f.item !== undefined);
      }
      return buffered.shift();
    };
  }
}

const isPrincipal = (value: unknown): value is string => typeof value === 'string' && value !== '';

/** A position of the inbox's order, as a cursor may carry it. */
const isPosition = (value: unknown): value is string =>
  typeof value === 'string' && value.length > 0 && value.length <= 1024;
