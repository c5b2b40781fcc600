import type { Change } from '../../../shared/events/types.js';
import { runChange } from '../events.js';
import { boundOutputs, capText, MAX_PROMPT_BYTES } from '../limits.js';
import type { RunLogEntry, RunLogEntryType } from '../runs/run-schemas.js';
import type { Step } from '../templates/template-schemas.js';
import type { StepOutcome } from './steps.js';
import type { RunItem, RunUpdate } from '../runs/run-store.js';
import { type RenderContext, render } from '../templates/templating.js';
import { logEntry } from '../runs/log-entry.js';
import { renderStep, shownInput } from './step-input.js';

/*
 * The rules of a crew run, as one pure function: given the run, its log and the time,
 * `decide` answers what to append to the log, how the run item changes with it, and what
 * the runner does next. It reads no clock and does no I/O; the runner (runner.ts) does what
 * it answers (takes a slot, executes a step, writes, arms a timer) and asks again.
 */

/** The types that end a run's attempt. */
const TERMINAL: ReadonlySet<RunLogEntryType> = new Set(['run.completed', 'run.failed', 'run.cancelled']);

/** The entries of the run's latest attempt: those after its last `run.retried` (all, when never retried). */
export function currentAttempt(log: readonly RunLogEntry[]): RunLogEntry[] {
  let last = -1;
  log.forEach((e, i) => {
    if (e.type === 'run.retried') last = i;
  });
  return log.slice(last + 1);
}

/** Whether the run's latest attempt has ended (completed, failed or cancelled). */
export const attemptEnded = (log: readonly RunLogEntry[]): boolean =>
  currentAttempt(log).some((e) => TERMINAL.has(e.type));

/**
 * When the run's current attempt times out: `run_timeout_seconds` after it started (its
 * `run.started`, or a retried run's first `step.started` after `run.retried`); undefined
 * without a timeout or before it started.
 */
export function timeoutOf(
  run: Pick<RunItem, 'run_timeout_seconds'>,
  attempt: readonly RunLogEntry[],
): number | undefined {
  if (!run.run_timeout_seconds) return undefined;
  const start = attempt.find((e) => e.type === 'run.started' || e.type === 'step.started');
  return start ? Date.parse(start.timestamp) + run.run_timeout_seconds * 1000 : undefined;
}

/** The longest a step can take (its timeout), plus room to write its events. */
export function stepBudgetMs(step: Step): number {
  const margin = 5_000;
  switch (step.kind) {
    case 'wait':
      return step.seconds * 1000 + margin;
    case 'http':
      return 10_000 + margin;
    case 'llm':
      return 60_000 + margin;
    case 'render':
    case 'approval':
      return margin;
  }
}

/**
 * What a delayed message is for: the expiry of the wait of `approval` step `step_id` that
 * ends at `expires_at` (its `step.waiting`). A message without one is a plain delivery.
 */
export interface StepTimer {
  readonly step_id: string;
  readonly expires_at: string;
}

/**
 * The timer has nothing left to do: its wait is not in the run's latest attempt (another
 * wait, or none), or the run went on after the step's outcome. A decided step with nothing
 * after it is continued (the decision's own message may have been lost: runs/run-service.ts, continueRun).
 */
export function timerSpent(attempt: readonly RunLogEntry[], timer: StepTimer): boolean {
  const waited = attempt.findIndex(
    (e) => e.type === 'step.waiting' && e.step_id === timer.step_id && e.data?.expires_at === timer.expires_at,
  );
  if (waited < 0) return true;
  const outcome = attempt.findIndex(
    (e, i) => i > waited && e.step_id === timer.step_id && (e.type === 'step.completed' || e.type === 'step.failed'),
  );
  return outcome >= 0 && outcome < attempt.length - 1;
}

/** A log entry the run's next write appends, with the run's fields it changes and the status change it records. */
export interface Appended {
  readonly entry: RunLogEntry;
  readonly fields?: RunUpdate;
  /** The domain event of a status change (docs/events-and-webhooks.md), written with the entry. */
  readonly change?: Change;
}

/** Where the run stands with its concurrency limit's slot at this point (the runner asked for it). */
export type SlotState =
  /** The run holds a slot now. */
  | 'held'
  /** None free: when to try again, and (once counted) the run's place in the line. */
  | { readonly retryAt: number; readonly position?: number };

/** What the runner did with the step `decide` asked it to execute. */
export type Executed =
  | { readonly step_id: string; readonly outcome: StepOutcome }
  /** Abandoned at the run's deadline: the step stays started. */
  | { readonly step_id: string; readonly timedOut: true };

/** Why a run ended in this call. */
export type Ending = 'completed' | 'failed' | 'step-failed' | 'timed-out';

/** What the runner does next. */
export type Next =
  /** The attempt has already ended: nothing to do. */
  | { readonly kind: 'done' }
  /** Take (or keep) a slot of the run's concurrency limit, then ask again with `slot`. */
  | { readonly kind: 'take-slot' }
  /** No slot: count the run's place in the line, then ask again with `slot.position`. */
  | { readonly kind: 'count-line' }
  /** No slot: write, let the lease go, and come back at `at` (a slot's retry, or the deadline if sooner). */
  | { readonly kind: 'wait-slot'; readonly at: number }
  /** Execute `step` (`io`: with the log written first and the lease held), then ask again with its outcome. */
  | {
      readonly kind: 'execute';
      readonly step: Step;
      readonly ctx: RenderContext;
      readonly io: boolean;
      readonly timesOutAt?: number;
    }
  /**
   * An approval waits: write, let the lease go, and arm the timer that ends this wait
   * (`timer`), due at `dueAt` (the expiry, or the run's deadline if sooner).
   */
  | { readonly kind: 'wait-decision'; readonly timer: StepTimer; readonly dueAt: number }
  /** The process is stopping: write what is gathered; the run stays as it is for the next executor. */
  | { readonly kind: 'stop' }
  /** Not enough time left in this delivery for the next step: write, and go on in a new one. */
  | { readonly kind: 'continue-later' }
  /** The run ended (`run.completed` or `run.failed` appended): write, and let the lease go. */
  | {
      readonly kind: 'finish';
      readonly ending: Ending;
      readonly step_id?: string;
      readonly error?: string;
      readonly timeout_seconds?: number;
    };

export interface DecideInput {
  /**
   * The run as it stands with everything appended so far, written or not: its status and
   * fields, and `event_count` the index of the next entry.
   */
  readonly run: RunItem;
  /** The run's log as read, with what was appended since (a run just queued may come without its `run.queued`). */
  readonly log: readonly RunLogEntry[];
  /** Now, in epoch milliseconds. */
  readonly now: number;
  /** The slot, when the runner was asked for it at this point (after `take-slot`). */
  readonly slot?: SlotState;
  /** The step executed since the last answer (after `execute`). */
  readonly executed?: Executed;
  /** How long this delivery may still run; undefined without a limit. */
  readonly remainingMs?: number;
  /** The process is stopping. */
  readonly stopping?: boolean;
}

export interface Decision {
  /** What to append to the run's log, in order (indexes from `run.event_count`). */
  readonly append: readonly Appended[];
  readonly next: Next;
}

/** Decides the run's next move: see the module's comment. */
export function decide(input: DecideInput): Decision {
  const { now } = input;
  const at = new Date(now).toISOString();
  const run: RunItem = { ...input.run };
  const log = [...input.log];
  const append: Appended[] = [];
  const add = (
    type: RunLogEntryType,
    message: string,
    stepId?: string,
    data?: Record<string, unknown>,
    fields?: RunUpdate,
  ) => {
    const entry = logEntry(run.correlation_id, run.event_count, at, {
      type,
      ...(stepId ? { step_id: stepId } : {}),
      message,
      ...(data ? { data } : {}),
    });
    const change = fields?.status ? runChange(fields.status, fields.finished_at ?? fields.started_at ?? at) : undefined;
    append.push({ entry, ...(fields ? { fields } : {}), ...(change ? { change } : {}) });
    log.push(entry);
    Object.assign(run, fields, { event_count: run.event_count + 1 });
  };
  const answer = (next: Next): Decision => ({ append, next });
  const fail = (stepId: string, error: string, withStepEntry: boolean, ending: Ending): Decision => {
    if (withStepEntry) add('step.failed', `Step ${stepId} failed: ${error}`, stepId, { error });
    add(
      'run.failed',
      `Run failed at step ${stepId}`,
      undefined,
      { error },
      { status: 'failed', finished_at: at, error },
    );
    return answer({ kind: 'finish', ending, step_id: stepId, error });
  };
  // Outlived `run_timeout_seconds`: `run.timed_out`, then `run.failed`.
  const timedOut = (): Decision => {
    const seconds = run.run_timeout_seconds!;
    const error = `timed out after ${seconds} s`;
    add('run.timed_out', `Run timed out: unfinished ${seconds} s after it started`, undefined, {
      timeout_seconds: seconds,
    });
    add('run.failed', `Run failed: ${error}`, undefined, { error }, { status: 'failed', finished_at: at, error });
    return answer({ kind: 'finish', ending: 'timed-out', error, timeout_seconds: seconds });
  };

  const attempt = () => currentAttempt(log);
  if (attempt().some((e) => TERMINAL.has(e.type))) return answer({ kind: 'done' });
  const find = (within: readonly RunLogEntry[], type: RunLogEntryType, id: string) =>
    within.find((e) => e.type === type && e.step_id === id);

  // The step just executed: its outcome, written before anything else is decided.
  const executed = input.executed;
  if (executed) {
    if ('timedOut' in executed) return timedOut();
    if (!executed.outcome.ok) return fail(executed.step_id, executed.outcome.error, true, 'step-failed');
    // The steps before it that completed (in this attempt, an earlier one or the run a rerun reuses), and it.
    const before = run.steps.slice(
      0,
      Math.max(
        0,
        run.steps.findIndex((s) => s.id === executed.step_id),
      ),
    );
    const completed = before.filter((s) => find(log, 'step.completed', s.id)).length + 1;
    add(
      'step.completed',
      `Step ${executed.step_id} completed`,
      executed.step_id,
      {
        output: executed.outcome.output,
        // Which provider and model answered an `llm` step, and the tokens it used.
        ...(executed.outcome.model ?? {}),
      },
      { completed_steps: completed, current_step: null },
    );
  }

  const timesOutAt = () => timeoutOf(run, attempt());
  const overdue = () => {
    const due = timesOutAt();
    return due !== undefined && now >= due;
  };
  /*
   * A run with a concurrency limit holds a slot while it runs: taken before it starts, or
   * goes on after an approval (a run waiting for one holds none). None free: the run waits
   * `pending` (again, when it had started; not when a step of it is under way, which can
   * only be a step resumed after its worker died), with `run.throttled` once per wait.
   * Undefined when the run holds one (or needs none); otherwise the answer.
   */
  const slotted = (stepUnderWay: boolean): Decision | undefined => {
    const limit = run.limit;
    if (!limit) return undefined;
    const slot = input.slot;
    if (slot === 'held') return undefined;
    if (slot === undefined) return answer({ kind: 'take-slot' });
    if (log.at(-1)?.type !== 'run.throttled') {
      if (slot.position === undefined) return answer({ kind: 'count-line' });
      add(
        'run.throttled',
        `Run waits for a slot of its concurrency limit (${limit.max} at once): position ${slot.position} in line`,
        undefined,
        { position: slot.position },
        run.status === 'running' && !stepUnderWay ? { status: 'pending' } : undefined,
      );
    }
    return answer({ kind: 'wait-slot', at: Math.min(slot.retryAt, timesOutAt() ?? Number.POSITIVE_INFINITY) });
  };

  // Checked as a delivery begins; after a step, the next step's own check applies (a run whose last step ended completes).
  if (!executed && overdue()) return timedOut();
  if (!log.some((e) => e.type === 'run.started')) {
    const waits = slotted(false);
    if (waits) return waits;
    add('run.started', 'Run started', undefined, undefined, { status: 'running', started_at: at });
  }
  // Keyed by step ids (the template's names): no inherited keys.
  const outputs: Record<string, unknown> = Object.create(null);
  // The run's `completed_steps` is written with the entries that move it.
  let completed = 0;
  for (const step of run.steps) {
    // Completed steps keep their outputs, also across retries (and a rerun's reused ones).
    const done = find(log, 'step.completed', step.id);
    if (done) {
      outputs[step.id] = done.data?.output ?? null;
      completed++;
      continue;
    }
    const failed = find(attempt(), 'step.failed', step.id);
    if (failed) return fail(step.id, String(failed.data?.error ?? 'step failed'), false, 'failed');
    if (input.stopping) return answer({ kind: 'stop' });
    if (input.remainingMs !== undefined && input.remainingMs < stepBudgetMs(step))
      return answer({ kind: 'continue-later' });
    if (overdue()) return timedOut();
    // An approval that waits needs no slot (it runs nothing); any other step runs in one.
    const waiting = find(attempt(), 'step.waiting', step.id);
    if (!(step.kind === 'approval' && waiting)) {
      const waits = slotted(find(attempt(), 'step.started', step.id) !== undefined);
      if (waits) return waits;
    }
    const ctx: RenderContext = { values: run.values, outputs };
    if (!find(attempt(), 'step.started', step.id)) {
      // A retried run (pending) or one resumed after a decision runs again from here.
      const resumed: RunUpdate =
        run.status === 'running' ? {} : { status: 'running', started_at: run.started_at ?? at };
      // What the step reads, rendered as it will be sent (secrets masked): a reviewer sees it.
      add(
        'step.started',
        `Step ${step.id} (${step.kind}) started`,
        step.id,
        { input: shownInput(renderStep(step, ctx)) },
        { ...resumed, current_step: step.id },
      );
    }
    if (step.kind === 'approval') {
      /*
       * The first time, `step.waiting` (status `waiting`): the run then holds nothing until a
       * decision (the decision endpoint writes the outcome and queues the run) or the timer
       * brings it back. Back with no decision after the expiry, the step fails.
       */
      let expiresMs: number;
      if (!waiting) {
        expiresMs = now + step.timeout_seconds * 1000;
        const role = step.role ?? 'approver';
        const prompt = capText(render(step.prompt, ctx), MAX_PROMPT_BYTES);
        const expiresAt = new Date(expiresMs).toISOString();
        // The approver sees what the next step will send when approved (rendered from the outputs so far).
        const following = run.steps[run.steps.indexOf(step) + 1];
        const next = following
          ? { step_id: following.id, kind: following.kind, input: shownInput(renderStep(following, ctx)) }
          : null;
        add(
          'step.waiting',
          `Step ${step.id} waits for a decision by a person with the role '${role}'`,
          step.id,
          { prompt, role, expires_at: expiresAt, next },
          {
            status: 'waiting',
            current_step: step.id,
            // The approvers' inbox lists the step, and its role's holders may read the run.
            waiting: { step_id: step.id, role, prompt, since: at, expires_at: expiresAt },
            approval_roles: [...new Set([...(run.approval_roles ?? []), role])],
          },
        );
      } else {
        expiresMs = Date.parse(String(waiting.data?.expires_at));
        if (!(now < expiresMs))
          return fail(
            step.id,
            `no decision by ${String(waiting.data?.expires_at)}: the approval expired`,
            true,
            'failed',
          );
      }
      // The timer says which wait it ends; it comes back at the run's deadline when that is sooner.
      return answer({
        kind: 'wait-decision',
        timer: { step_id: step.id, expires_at: new Date(expiresMs).toISOString() },
        dueAt: Math.min(expiresMs, timesOutAt() ?? Number.POSITIVE_INFINITY),
      });
    }
    const due = timesOutAt();
    return answer({
      kind: 'execute',
      step,
      ctx,
      io: step.kind !== 'render',
      ...(due !== undefined ? { timesOutAt: due } : {}),
    });
  }
  add(
    'run.completed',
    'Run completed',
    undefined,
    { outputs: boundOutputs(outputs) },
    { status: 'succeeded', finished_at: at },
  );
  return answer({ kind: 'finish', ending: 'completed' });
}

/** A run whose messages kept failing (the dead-letter queue) ends with `run.failed`, unless its attempt ended. */
export function abandon(input: Pick<DecideInput, 'run' | 'log' | 'now'>, reason: string): Decision {
  if (attemptEnded(input.log)) return { append: [], next: { kind: 'done' } };
  const at = new Date(input.now).toISOString();
  const error = `The run was abandoned after repeated failures: ${reason}`;
  const entry = logEntry(input.run.correlation_id, input.log.length, at, {
    type: 'run.failed',
    message: error,
    data: { error },
  });
  return {
    append: [{ entry, fields: { status: 'failed', finished_at: at, error }, change: runChange('failed', at) }],
    next: { kind: 'finish', ending: 'failed', error },
  };
}
