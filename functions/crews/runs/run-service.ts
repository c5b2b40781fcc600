import { randomUUID } from 'node:crypto';
import { type Caller, isAdmin, isPrincipal } from '../../../shared/auth/caller.js';
import type { Page } from '../../../shared/page.js';
import { type Clock, systemClock } from '../../../shared/clock.js';
import { mapLimit } from '../../../shared/concurrency.js';
import { canonicalJson } from '../../../shared/crypto.js';
import {
  Conflict,
  Forbidden,
  Invalid,
  NotFound,
  Unavailable,
  type ValidationIssue,
  valueError,
} from '../../../shared/errors.js';
import { logger } from '../../../shared/logger.js';
import { redactUrl } from '../../../shared/redact.js';
import { AGAIN, retry } from '../../../shared/retry.js';
import { runChange, runRetried } from '../events.js';
import { capText, MAX_BULK_CANCEL, MAX_ERROR_BYTES } from '../limits.js';
import type { BulkCancelRequest, BulkCancelResult, CrewRun } from './run-schemas.js';
import type { CrewTemplate } from '../templates/template-schemas.js';
import { rerunValues, resolveValues } from '../templates/declaration.js';
import type { TemplateService } from '../templates/template-service.js';
import { ownRun, readableRun } from './run-access.js';
import { runLimitsOf } from './run-limits.js';
import { type ExtraWrite, FINISHED_STATUSES, type RunItem, type RunStore, toRun } from './run-store.js';
import { logEntry, type LogEntryFields } from './log-entry.js';

/** Up to this many tries when the run moves on between read and write. */
const CONFLICT_ROUNDS = 10;

/** The same answer for every step id of a run the caller could decide nothing of (see decideStep). */
const NO_DECIDING_ROLE = 'Deciding a step of this run needs the role its approval step names';

/** What a new run is made of: its template's (E2), or for a rerun the old run's snapshot. */
type RunTemplate = Pick<CrewTemplate, 'id' | 'name' | 'steps'> & { readonly variables?: CrewTemplate['variables'] };

/** A rerun of run `of` from step `fromStep`: the outputs it carries over, by step, in order. */
interface RerunOf {
  readonly of: string;
  readonly fromStep: string;
  readonly reused: readonly (readonly [stepId: string, output: unknown])[];
}

/** How many runs of a bulk cancel are cancelled at once. */
const BULK_CANCEL_CONCURRENCY = 8;

/** What `retry` continues. */
const RETRYABLE: ReadonlySet<string> = new Set(['failed', 'cancelled']);

/** Where runs go to be executed (the crew-run queue). */
export interface RunQueue {
  /**
   * With `run`, the message carries the run as just stored (a new run's first message), so
   * the worker need not read it back; the queue leaves it out when it is large.
   */
  send(correlationId: string, run?: RunItem): Promise<void>;
  /** Several runs at once (SQS: batches of ten); a queue without it is sent to one by one. */
  sendAll?(correlationIds: readonly string[]): Promise<void>;
}

/**
 * A run's own webhook (E2 `webhook_url`, docs/events-and-webhooks.md): the webhooks group implements it
 * (functions/webhooks/run-endpoint.ts) and the composition hands it in, so crews knows
 * nothing of endpoints, secrets or their seals.
 */
export interface RunWebhooks {
  /** Why `url` cannot take a run's webhook, or undefined when it can. */
  refusal(url: string): string | undefined;
  /**
   * The run's endpoint: its item, written in the run's creating transaction, and its signing
   * secret, shown once in E2's answer.
   */
  endpoint(run: RunEndpointOf): Promise<{ readonly item: Record<string, unknown>; readonly secret: string }>;
}

/** A condition of the fire's writes refused them: nothing was stored (startScheduledRun). */
class FireRefused extends Error {}

/** A run a schedule's fire starts (schedules/schedule-service.ts). */
export interface ScheduledRun {
  readonly scheduleId: string;
  readonly scheduledTime: string;
  /**
   * The fire's writes besides the run (its record of the run, the schedule's `last_run_at`
   * and `crew.schedule.fired` event), in the run's creating transaction: all or none.
   */
  record(run: RunItem): readonly ExtraWrite[];
}

/** Whose run a run's webhook endpoint serves. */
export interface RunEndpointOf {
  readonly correlationId: string;
  readonly url: string;
  readonly createdBy: string;
  readonly principal: string;
  readonly createdAt: string;
  /** Epoch seconds: the run's own expiry. */
  readonly expiresAt: number;
}

/** Crew templates, starting runs (E2), and reading their progress (E13). */
export interface RunSettings {
  readonly eventsTtlDays: number;
  /** The time the service reads (an approval's expiry, a run's TTL): the system's unless given. */
  readonly clock?: Clock;
}

/** Crew runs (docs/crews.md, E2): started, read, listed, cancelled, retried, rerun and decided. */
export class RunService {
  private readonly clock: Clock;

  constructor(
    private readonly templates: Pick<TemplateService, 'getTemplate' | 'findTemplate'>,
    private readonly runs: RunStore,
    private readonly queue: RunQueue,
    private readonly settings: RunSettings,
    private readonly webhooks?: RunWebhooks,
  ) {
    this.clock = settings.clock ?? systemClock;
  }

  /**
   * E2: stores the run with its `run.queued` event (index 0), and with a `webhookUrl` the
   * run's own webhook endpoint, in one transaction, then queues it. A run that cannot be
   * queued is failed at once, never left pending.
   */
  async startRun(
    templateId: string,
    values: Record<string, unknown>,
    caller: Caller,
    webhookUrl?: string,
  ): Promise<{ correlation_id: string; webhook_secret?: string }> {
    return this.startRunOf(await this.templates.getTemplate(templateId), values, caller, webhookUrl);
  }

  /** E2 on `template`; `valuesField` is where the request held the values (for 422 locations). */
  async startRunOf(
    template: CrewTemplate,
    values: Record<string, unknown>,
    caller: Caller,
    webhookUrl?: string,
    valuesField = 'values',
  ): Promise<{ correlation_id: string; webhook_secret?: string }> {
    const issues: ValidationIssue[] = [];
    let resolved: Record<string, unknown> = {};
    try {
      resolved = resolveValues(template.variables, values, valuesField);
    } catch (err) {
      if (!(err instanceof Invalid)) throw err;
      issues.push(...err.issues);
    }
    if (webhookUrl !== undefined) {
      const refusal = this.webhooks ? this.webhooks.refusal(webhookUrl) : 'per-run webhooks are not available here';
      // The input is echoed without the URL's credentials, if it carries any.
      if (refusal) issues.push(valueError(['body', 'webhook_url'], refusal, redactUrl(webhookUrl)));
    }
    if (issues.length > 0) throw new Invalid(issues);
    return this.queueRun(template, resolved, caller, webhookUrl);
  }

  /**
   * Stores a new run of `template` with its `run.queued` event (index 0), for a rerun the
   * `step.completed` of each step it carries over after it, and with `webhookUrl` the run's
   * own webhook endpoint, in one transaction, then queues it (E2 and reruns).
   */
  private async queueRun(
    template: RunTemplate,
    resolved: Record<string, unknown>,
    /** Whose run it is (a schedule's fire: its creator's). */
    caller: Pick<Caller, 'name' | 'principal'>,
    webhookUrl?: string,
    rerun?: RerunOf,
    fire?: ScheduledRun,
  ): Promise<{ correlation_id: string; webhook_secret?: string }> {
    const at = this.clock.iso();
    const correlationId = randomUUID();
    const reused = rerun?.reused ?? [];
    const expiresAt = Math.floor(this.clock.now() / 1000) + this.settings.eventsTtlDays * 86_400;
    const webhook =
      webhookUrl !== undefined && this.webhooks
        ? await this.webhooks.endpoint({
            correlationId,
            url: webhookUrl,
            createdBy: caller.name,
            principal: caller.principal,
            createdAt: at,
            expiresAt,
          })
        : undefined;
    const run: RunItem = {
      correlation_id: correlationId,
      template_id: template.id,
      status: 'pending',
      values: resolved,
      created_by: caller.name,
      created_by_principal: caller.principal,
      created_at: at,
      started_at: null,
      finished_at: null,
      event_count: 1 + reused.length,
      error: null,
      steps: template.steps,
      ...(template.variables ? { variables: template.variables } : {}),
      expires_at: expiresAt,
      template_name: template.name,
      ...runLimitsOf(template, resolved),
      ...(rerun ? { rerun_of: rerun.of, completed_steps: reused.length } : {}),
      ...(fire ? { schedule_id: fire.scheduleId } : {}),
    };
    const queued = logEntry(run.correlation_id, 0, at, {
      type: 'run.queued',
      message: rerun
        ? `Rerun of run ${rerun.of} from step ${rerun.fromStep} (crew template '${template.name}') queued by ${caller.name}`
        : fire
          ? `Run of crew template '${template.name}' queued by schedule ${fire.scheduleId} (due ${fire.scheduledTime}) for ${caller.name}`
          : `Run of crew template '${template.name}' queued by ${caller.name}`,
      data: {
        template_id: template.id,
        values: resolved,
        ...(rerun ? { rerun_of: rerun.of, from_step: rerun.fromStep } : {}),
        ...(fire ? { schedule_id: fire.scheduleId, scheduled_time: fire.scheduledTime } : {}),
      },
    });
    const carried = reused.map(([stepId, output], i) =>
      logEntry(run.correlation_id, 1 + i, at, {
        type: 'step.completed',
        step_id: stepId,
        message: `Step ${stepId} completed: its output in run ${rerun?.of} is reused`,
        data: { output, reused: true },
      }),
    );
    const stored = await this.runs.create(
      run,
      [queued, ...carried],
      runChange('pending', at, caller.name),
      webhook?.item,
      fire?.record(run),
    );
    if (!stored) throw new FireRefused();
    // The message carries the run as stored: the worker starts it without reading it back.
    await this.queueOrFail(stored, stored.event_count, true);
    return { correlation_id: run.correlation_id, ...(webhook ? { webhook_secret: webhook.secret } : {}) };
  }

  /**
   * A schedule's fire (docs/crews.md): E2 of `template` as the schedule's creator (`starter`)
   * would start it, with `schedule_id` on the run. `fire.record`'s writes are made in the
   * run's creating transaction, each on its condition (the fire's record is new, the schedule
   * is as the fire read it), so a fire repeated (a message delivered twice, a restart) makes
   * no second run, and no run exists without its fire's event: when a condition refuses,
   * nothing is stored and the answer is undefined.
   */
  async startScheduledRun(
    template: CrewTemplate,
    values: Record<string, unknown>,
    starter: Pick<Caller, 'name' | 'principal'>,
    fire: ScheduledRun,
  ): Promise<{ correlation_id: string } | undefined> {
    const resolved = resolveValues(template.variables, values, 'values');
    try {
      return await this.queueRun(template, resolved, starter, undefined, undefined, fire);
    } catch (err) {
      if (err instanceof FireRefused) return undefined;
      throw err;
    }
  }

  /**
   * Queues every unfinished run again (a lost message, such as the local emulator's after
   * a restart, would leave it pending forever); the worker resumes each where it stopped.
   */
  async requeueOpenRuns(): Promise<number> {
    let count = 0;
    let cursor: string | undefined;
    do {
      const page = await this.runs.openRuns(100, cursor);
      if (this.queue.sendAll) await this.queue.sendAll(page.items);
      else for (const id of page.items) await this.queue.send(id);
      count += page.items.length;
      cursor = page.nextCursor;
    } while (cursor);
    return count;
  }

  async getRun(correlationId: string, caller: Caller): Promise<CrewRun> {
    return toRun(await readableRun(this.runs, correlationId, caller));
  }

  /**
   * Cancels a run not yet finished: `run.cancelled` is appended at the run's next index
   * with its status, conditioned on the index (so on nothing having been written since the
   * read): after it nothing more is written, the worker finds it before any step and
   * abandons a step under way (see CrewRunner). A finished run is 409.
   */
  async cancelRun(correlationId: string, reason: string | undefined, caller: Caller): Promise<CrewRun> {
    const cancelled = await retry(
      async () => {
        const run = await ownRun(this.runs, correlationId, caller);
        if (FINISHED_STATUSES.has(run.status)) throw new Conflict(`Crew run ${correlationId} already ${run.status}`);
        return (await this.cancelAt(run, reason, caller)) ?? AGAIN;
      },
      { attempts: CONFLICT_ROUNDS },
    );
    if (cancelled.done) return toRun(cancelled.value);
    throw new Conflict(`Crew run ${correlationId} changed concurrently; try again`);
  }

  /**
   * `run.cancelled` at the run's next index as read, with its status, conditioned on that
   * index: the run as cancelled, or undefined when it moved on since the read.
   */
  private async cancelAt(run: RunItem, reason: string | undefined, caller: Caller): Promise<RunItem | undefined> {
    const at = this.clock.iso();
    const update = { status: 'cancelled' as const, finished_at: at };
    const entry = logEntry(run.correlation_id, run.event_count, at, {
      type: 'run.cancelled',
      message: `Run cancelled by ${caller.name}${reason ? `: ${reason}` : ''}`,
      data: { by: caller.name, reason: reason ?? null },
    });
    return (await this.runs.append(run, entry, update, runChange('cancelled', at, caller.name)))
      ? { ...run, ...update, event_count: run.event_count + 1 }
      : undefined;
  }

  /**
   * Bulk cancel (docs/crews.md): every unfinished run matching the filter, cancelled as by
   * cancelRun. A caller without the role `admin`, or with `createdBy: 'me'`, reads only their
   * own runs (their index); an admin otherwise only unfinished runs (`open_runs`). At most
   * MAX_BULK_CANCEL runs per call, oldest first (`more` says whether others matched). A run
   * that finished, or moved out of the wanted statuses, between the read and its cancel is
   * matched but not cancelled.
   */
  async cancelRuns(filter: BulkCancelRequest, caller: Caller): Promise<BulkCancelResult> {
    const own = !isAdmin(caller) || filter.created_by === 'me';
    const { runs, more } = await this.runs.openRunsMatching(
      {
        ...(own ? { owner: caller.principal } : {}),
        ...(filter.template_id !== undefined ? { templateId: filter.template_id } : {}),
        ...(filter.status !== undefined ? { statuses: filter.status } : {}),
        // As `created_at` is written, so that the index's order compares them.
        ...(filter.created_before !== undefined
          ? { createdBefore: new Date(filter.created_before).toISOString() }
          : {}),
      },
      MAX_BULK_CANCEL,
    );
    const wanted = (run: RunItem) =>
      !FINISHED_STATUSES.has(run.status) &&
      (filter.status === undefined || (filter.status as readonly string[]).includes(run.status));
    const cancelled = await mapLimit(runs, BULK_CANCEL_CONCURRENCY, async (found) => {
      let run: RunItem | undefined = found;
      // The index is read eventually consistent: a run that moved on is read again.
      const tried = await retry(
        async () => {
          if (!run || !wanted(run)) return false;
          if (await this.cancelAt(run, undefined, caller)) return true;
          run = await this.runs.get(found.correlation_id);
          return AGAIN;
        },
        { attempts: CONFLICT_ROUNDS },
      );
      return tried.done && tried.value;
    });
    return { matched: runs.length, cancelled: cancelled.filter(Boolean).length, more };
  }

  /**
   * Continues a failed or cancelled run under the same id: `run.retried` (status `pending`)
   * at the next index, conditioned on it, then the run is queued; the worker keeps the
   * completed steps' outputs and runs the failed (or next) step again. Another status is 409.
   */
  async retryRun(correlationId: string, caller: Caller): Promise<CrewRun> {
    const retried = await retry(
      async () => {
        const run = await ownRun(this.runs, correlationId, caller);
        if (!RETRYABLE.has(run.status))
          throw new Conflict(
            `Crew run ${correlationId} is ${run.status}: only a failed or cancelled run can be retried`,
          );
        const at = this.clock.iso();
        const update = { status: 'pending' as const, finished_at: null, error: null, current_step: null };
        const entry = logEntry(run.correlation_id, run.event_count, at, {
          type: 'run.retried',
          message: `Run retried by ${caller.name} after it ${run.status === 'failed' ? 'failed' : 'was cancelled'}`,
          data: { by: caller.name, previous_status: run.status },
        });
        if (await this.runs.append(run, entry, update, runRetried(at, caller.name))) {
          await this.queueOrFail(run, run.event_count + 1);
          return toRun({ ...run, ...update, event_count: run.event_count + 1 });
        }
        return AGAIN;
      },
      { attempts: CONFLICT_ROUNDS },
    );
    if (retried.done) return retried.value;
    throw new Conflict(`Crew run ${correlationId} changed concurrently; try again`);
  }

  /**
   * Reruns a finished run from step `fromStep` as a new run of the caller's (docs/crews.md), the
   * old run left as it is. The new run has the old run's steps and variables (snapshots taken
   * when it started: what the template became since does not matter), the old values with
   * `values` over them, and the outputs of the steps before `fromStep` carried over: a
   * `step.completed` with `data.reused` for each, written with its `run.queued`. Its
   * starter's or an admin's (the new run is then the admin's). An approval step's decision
   * carries over only to its starter rerunning with the same values: what was approved is
   * then exactly what runs again; anyone else, or other values, must ask again.
   *
   * The checks come in the API's error order (validation of the request before the run's state):
   *
   * | check                                                                   | answer |
   * |-------------------------------------------------------------------------|--------|
   * | (app) no or invalid credentials; a bad path or body                      | 401, 422 |
   * | no such run                                                              | 404    |
   * | neither its starter nor an admin                                         | 403    |
   * | `fromStep` is none of its steps; `values` as E2 checks them (together)   | 422    |
   * | not finished                                                             | 409    |
   * | `values` given, no variables known (an old run whose template is gone)   | 409    |
   * | a step before `fromStep` never completed                                 | 409    |
   * | an approval step before `fromStep`, and another caller or other values   | 409    |
   */
  async rerunRun(
    correlationId: string,
    fromStep: string,
    values: Record<string, unknown>,
    caller: Caller,
  ): Promise<{ correlation_id: string }> {
    const old = await ownRun(this.runs, correlationId, caller);
    const from = old.steps.findIndex((step) => step.id === fromStep);
    // Its template as it is now, when it still exists: the variables of a run stored before
    // runs kept theirs, and the template's own settings.
    const current = await this.templates.findTemplate(old.template_id);
    const variables = old.variables ?? current?.variables;
    const overridden = Object.keys(values).length > 0;
    const issues: ValidationIssue[] = [];
    if (from < 0) {
      const ids = old.steps.map((step) => step.id).join(', ');
      issues.push(
        valueError(
          ['body', 'from_step'],
          `crew run ${correlationId} has no step '${fromStep}' (its steps: ${ids})`,
          fromStep,
        ),
      );
    }
    let resolved = old.values;
    if (overridden && variables) {
      try {
        resolved = rerunValues(variables, old.values, values);
      } catch (err) {
        if (!(err instanceof Invalid)) throw err;
        issues.push(...err.issues);
      }
    }
    if (issues.length > 0) throw new Invalid(issues);
    if (!FINISHED_STATUSES.has(old.status))
      throw new Conflict(`Crew run ${correlationId} is ${old.status}: only a finished run can be rerun`);
    if (overridden && !variables)
      throw new Conflict(
        `Crew run ${correlationId} was stored before runs kept their variables and its template is gone: its values cannot be checked, so it can be rerun only with the values it had`,
      );
    const before = old.steps.slice(0, from);
    const entries = before.length > 0 ? await this.runs.allLogEntries(correlationId) : [];
    const reused = before.map((step) => {
      // The first outcome counts, as for the runner (a retried run keeps its completed steps).
      const done = entries.find((e) => e.type === 'step.completed' && e.step_id === step.id);
      if (!done)
        throw new Conflict(
          `Step ${step.id} never completed in crew run ${correlationId}: rerun from step ${step.id} or an earlier one`,
        );
      return [step.id, done.data?.output ?? null] as const;
    });
    const approval = before.find((step) => step.kind === 'approval');
    if (
      approval &&
      (!isPrincipal(old.created_by_principal, caller) || canonicalJson(resolved) !== canonicalJson(old.values))
    )
      throw new Conflict(
        `Step ${approval.id} is an approval decided in crew run ${correlationId}: its decision carries over only to a rerun by the run's starter with the same values; rerun from step ${approval.id} or an earlier one to ask again`,
      );
    const template: RunTemplate = {
      ...current,
      id: old.template_id,
      name: old.template_name ?? current?.name ?? old.template_id,
      steps: old.steps,
      ...(variables ? { variables } : {}),
    };
    const { correlation_id } = await this.queueRun(template, resolved, caller, undefined, {
      of: correlationId,
      fromStep,
      reused,
    });
    return { correlation_id };
  }

  /**
   * A person's decision on a waiting `approval` step (docs/crews.md): only with a Bearer
   * session, the step's role and not as the run's starter (four-eyes, by principal).
   * Approve: `step.completed` (the run is `running` again) and the run is queued; reject:
   * `step.failed` and `run.failed` in one write. Conditioned on the run's index, so of two
   * deciders exactly one wins (the other gets 409), as against a cancel or the expiry.
   *
   * The checks come in the API's error order (401 → 403 → 422 → 404 → 409), and a caller who
   * could decide no step of the run learns nothing of its steps (whether one exists, its
   * kind, its state):
   *
   * | check                                                    | answer |
   * |----------------------------------------------------------|--------|
   * | (app) no or invalid credentials                          | 401    |
   * | no Bearer session (a key), or no role at all             | 403    |
   * | (app) bad path or body                                   | 422    |
   * | no such run                                              | 404    |
   * | none of the roles of the run's approval steps            | 403, whatever the step id |
   * | no such step                                             | 404    |
   * | not an approval step                                     | 409    |
   * | not the step's role                                      | 403    |
   * | the step is not waiting, or its approval expired         | 409    |
   * | the run's starter (four-eyes)                            | 403    |
   *
   * So a caller who holds some role learns whether a run id exists (404 or 403), nothing
   * more, unless it holds a role one of the run's approval steps names.
   */
  async decideStep(
    correlationId: string,
    stepId: string,
    decision: { approve: boolean; notes?: string | undefined },
    caller: Caller,
  ): Promise<CrewRun> {
    if (caller.via !== 'bearer') throw new Forbidden('A decision needs a Bearer session (a person), not a key');
    if (caller.roles.size === 0) throw new Forbidden(NO_DECIDING_ROLE);
    const decided = await retry(
      async () => {
        const run = await this.runs.get(correlationId);
        if (!run) throw new NotFound(`No crew run ${correlationId}`);
        if (!run.steps.some((s) => s.kind === 'approval' && caller.roles.has(s.role ?? 'approver')))
          throw new Forbidden(NO_DECIDING_ROLE);
        const step = run.steps.find((s) => s.id === stepId);
        if (!step) throw new NotFound(`Crew run ${correlationId} has no step ${stepId}`);
        if (step.kind !== 'approval') throw new Conflict(`Step ${stepId} is a ${step.kind} step, not an approval`);
        const role = step.role ?? 'approver';
        if (!caller.roles.has(role)) throw new Forbidden(`Deciding step ${stepId} needs the role '${role}'`);
        const waiting = run.status === 'waiting' && run.current_step === stepId;
        const [last] = waiting ? await this.runs.logEntries(correlationId, run.event_count - 1, 1) : [];
        if (!last || last.type !== 'step.waiting' || last.step_id !== stepId)
          throw new Conflict(`Step ${stepId} of crew run ${correlationId} is not waiting for a decision`);
        const expiresAt = String(last.data?.expires_at);
        if (!(this.clock.now() < Date.parse(expiresAt)))
          throw new Conflict(`The approval of step ${stepId} expired at ${expiresAt}`);
        if (isPrincipal(run.created_by_principal, caller))
          throw new Forbidden("The run's starter may not decide its approval (four-eyes rule)");
        const at = this.clock.iso();
        const notes = decision.notes ?? null;
        const entry = (offset: number, fields: LogEntryFields) =>
          logEntry(correlationId, run.event_count + offset, at, fields);
        if (decision.approve) {
          const update = {
            status: 'running' as const,
            completed_steps: (run.completed_steps ?? 0) + 1,
            current_step: null,
          };
          const approved = entry(0, {
            type: 'step.completed',
            step_id: stepId,
            message: `Step ${stepId} approved by ${caller.name}`,
            data: { output: { approved: true, by: caller.name, notes } },
          });
          if (await this.runs.append(run, approved, update, runChange('running', at, caller.name))) {
            await this.continueRun(correlationId);
            return toRun({ ...run, ...update, event_count: run.event_count + 1 });
          }
        } else {
          const error = capText(`rejected by ${caller.name}${notes ? `: ${notes}` : ''}`, MAX_ERROR_BYTES);
          const update = { status: 'failed' as const, finished_at: at, error };
          const rejected = [
            entry(0, {
              type: 'step.failed',
              step_id: stepId,
              message: `Step ${stepId} failed: ${error}`,
              data: { error },
            }),
            entry(1, { type: 'run.failed', message: `Run failed at step ${stepId}`, data: { error } }),
          ];
          if (await this.runs.append(run, rejected, update, runChange('failed', at, caller.name)))
            return toRun({ ...run, ...update, event_count: run.event_count + 2 });
        }
        return AGAIN;
      },
      { attempts: CONFLICT_ROUNDS },
    );
    if (decided.done) return decided.value;
    throw new Conflict(`Crew run ${correlationId} changed concurrently; try again`);
  }

  /**
   * Queues an approved run. The decision is stored either way: when the queue does not
   * answer, the step's expiry timer (a delayed message already queued) brings the run
   * back to the worker instead, so the answer stays the decision's.
   */
  private async continueRun(correlationId: string): Promise<void> {
    try {
      await this.queue.send(correlationId);
    } catch (err) {
      logger.error('could not queue an approved crew run; its approval timer will continue it', {
        correlation_id: correlationId,
        error: err as Error,
      });
    }
  }

  /**
   * Queues the run; a run that cannot be queued is failed at once at `index` (never left
   * pending with nothing to carry it) and the answer is 503.
   */
  private async queueOrFail(run: RunItem, index: number, carry = false): Promise<void> {
    try {
      await this.queue.send(run.correlation_id, carry ? run : undefined);
    } catch (err) {
      logger.error('could not queue crew run', { correlation_id: run.correlation_id, error: err as Error });
      const error = 'The run could not be queued: the queue did not answer';
      const failedAt = this.clock.iso();
      // As stored now: failed only when nothing wrote after the write that queued it.
      const current = await this.runs.get(run.correlation_id);
      if (current?.event_count !== index)
        throw new Unavailable('The crew-run queue did not answer; the run was left as it is');
      await this.runs.append(
        current,
        logEntry(run.correlation_id, index, failedAt, { type: 'run.failed', message: error, data: { error } }),
        { status: 'failed', finished_at: failedAt, error },
        runChange('failed', failedAt),
      );
      throw new Unavailable('The crew-run queue did not answer; the run was marked failed');
    }
  }

  /**
   * Runs newest first: the caller's own (by principal), an admin's every run
   * unless `createdBy` is `me` (their own, read from the same owner index). Runs stored
   * before principals were are in no one's own list.
   */
  async listRuns(
    filter: { status?: CrewRun['status']; templateId?: string; createdBy?: 'me' },
    limit: number,
    cursor: string | undefined,
    caller: Caller,
  ): Promise<Page<CrewRun>> {
    const { createdBy, ...rest } = filter;
    const own = !isAdmin(caller) || createdBy === 'me';
    const page = await this.runs.list({ ...rest, ...(own ? { owner: caller.principal } : {}) }, limit, cursor);
    return { items: page.items.map(toRun), nextCursor: page.nextCursor };
  }
}
