import { runChange } from './events.js';
import { logger } from '../../shared/logger.js';
import { nowIso } from '../../shared/time.js';
import { boundOutputs, capText, MAX_MESSAGE_BYTES, MAX_PROMPT_BYTES } from './limits.js';
import type { ApprovalStep, CrewEvent, EventType } from './schemas.js';
import type { StepOutcome } from './steps.js';
import type { RunItem, RunStore, RunUpdate } from './store.js';
import { InProcessRunSignals, type RunSignals } from './signals.js';
import { type RenderContext, render } from './templating.js';

export interface StepRunner {
  execute(step: RunItem['steps'][number], ctx: RenderContext, cancelled?: AbortSignal): Promise<StepOutcome>;
}

/** While a step runs, the run is read this often to see whether it was cancelled (one GetItem). */
export const CANCEL_CHECK_MS = 1_000;

/** Another delivery of the same run wrote the index first; progress is re-read. */
class IndexTaken extends Error {}

/** What a watched step answers when the run was cancelled while it ran. */
const CANCELLED = Symbol('cancelled');

/** Not enough time left in this delivery for the next step: the run continues in a new one. */
class OutOfTime extends Error {}

/** How long this delivery may still run (a Lambda's remaining time). */
export interface Deadline {
  remainingMs(): number;
}

/** The longest a step can take (its timeout), plus room to write its events. */
export function stepBudgetMs(step: RunItem['steps'][number]): number {
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

export type ProcessResult = 'done' | 'continue-later';

const TERMINAL = new Set(['run.completed', 'run.failed', 'run.cancelled']);

/** The events of the run's latest attempt: those after its last `run.retried` (all, when never retried). */
export function currentAttempt(events: readonly CrewEvent[]): CrewEvent[] {
  let last = -1;
  events.forEach((e, i) => {
    if (e.type === 'run.retried') last = i;
  });
  return events.slice(last + 1);
}

/** Brings a run back to the worker after a delay (the expiry of an `approval` step). */
export interface RunTimer {
  after(correlationId: string, delaySeconds: number): Promise<void>;
}

/** SQS delays a message at most this long: a longer wait is re-armed when it arrives. */
export const MAX_TIMER_SECONDS = 900;
const MAX_RESUMES = 20;

/**
 * Executes a run from its event log. The log is the run's state: a delivery reads it,
 * skips what is done (completed steps keep their outputs), re-executes a step that was
 * started but not finished, and appends each new event at the next index with a
 * conditional write. A duplicate or retried delivery therefore resumes where the last
 * one stopped, and never writes an event twice or skips an index.
 */
export class CrewRunner {
  constructor(
    private readonly runs: RunStore,
    private readonly steps: StepRunner,
    /** Wakes the cancellation check at once when the run changes in this process. */
    private readonly signals: RunSignals = new InProcessRunSignals(),
    /** Arms the expiry of `approval` steps. */
    private readonly timers?: RunTimer,
  ) {}

  /**
   * Advances the run as far as it can. With a deadline, a step that might not finish in
   * the time left is not started: the answer is 'continue-later' and the caller queues
   * the run again, so a long run never uses up its delivery attempts.
   */
  async process(correlationId: string, deadline?: Deadline): Promise<ProcessResult> {
    for (let attempt = 0; attempt < MAX_RESUMES; attempt++) {
      const run = await this.runs.get(correlationId);
      if (!run) {
        logger.warn('crew run not found; message dropped', { correlation_id: correlationId });
        return 'done';
      }
      // A run just queued has only its `run.queued` (nothing in it the worker needs): no Query.
      const events = run.event_count <= 1 ? [] : await this.runs.allEvents(correlationId);
      try {
        await this.advance(run, events, deadline);
        return 'done';
      } catch (err) {
        if (err instanceof OutOfTime) return 'continue-later';
        if (!(err instanceof IndexTaken)) throw err;
      }
    }
    throw new Error(`crew run ${correlationId}: gave up after ${MAX_RESUMES} concurrent-write conflicts`);
  }

  /** The message kept failing (dead-letter queue): the run ends with `run.failed`. */
  async failAbandoned(correlationId: string, reason: string): Promise<void> {
    for (let attempt = 0; attempt < MAX_RESUMES; attempt++) {
      const run = await this.runs.get(correlationId);
      if (!run) return;
      const events = await this.runs.allEvents(correlationId);
      if (currentAttempt(events).some((e) => TERMINAL.has(e.type))) return;
      const error = `The run was abandoned after repeated failures: ${reason}`;
      const at = nowIso();
      const ok = await this.runs.append(
        run,
        this.event(run, events.length, 'run.failed', error, undefined, { error }),
        { status: 'failed', finished_at: at, error },
        runChange('failed', at),
      );
      if (ok) return;
    }
  }

  private async advance(run: RunItem, events: CrewEvent[], deadline: Deadline | undefined): Promise<void> {
    // A retried run's log goes on after `run.retried`: what came before it counts only for completed steps.
    const attempt = currentAttempt(events);
    if (attempt.some((e) => TERMINAL.has(e.type))) return;
    const log = logger.createChild({ persistentKeys: { correlation_id: run.correlation_id } });
    /*
     * Events are gathered and written together where nothing observable happens between
     * them: a step's closing event with the next step's opening one, and render steps (no
     * I/O) entirely. Before a step with I/O everything gathered is written, so its
     * `step.started` is there while it runs. One status change per write: each is its own
     * domain event.
     */
    let next = Math.max(events.length, run.event_count);
    let pending: CrewEvent[] = [];
    let update: RunUpdate = {};
    let status = run.status;
    const flush = async () => {
      if (pending.length === 0) return;
      const at = update.finished_at ?? update.started_at ?? pending[pending.length - 1]!.timestamp;
      const change = update.status ? runChange(update.status, at) : undefined;
      if (!(await this.runs.append(run, pending, update, change))) throw new IndexTaken();
      next += pending.length;
      pending = [];
      update = {};
    };
    const add = async (
      type: EventType,
      message: string,
      stepId?: string,
      data?: Record<string, unknown>,
      fields?: RunUpdate,
    ) => {
      if (fields?.status && update.status) await flush();
      pending.push(this.event(run, next + pending.length, type, message, stepId, data));
      Object.assign(update, fields);
      if (fields?.status) status = fields.status;
    };
    const fail = async (stepId: string, error: string, withStepEvent: boolean) => {
      if (withStepEvent) await add('step.failed', `Step ${stepId} failed: ${error}`, stepId, { error });
      await add(
        'run.failed',
        `Run failed at step ${stepId}`,
        undefined,
        { error },
        {
          status: 'failed',
          finished_at: nowIso(),
          error,
        },
      );
      await flush();
    };
    const find = (within: CrewEvent[], type: EventType, id: string) =>
      within.find((e) => e.type === type && e.step_id === id);

    if (!events.some((e) => e.type === 'run.started')) {
      await add('run.started', 'Run started', undefined, undefined, { status: 'running', started_at: nowIso() });
    }
    // Keyed by step ids (the template's names): no inherited keys.
    const outputs: Record<string, unknown> = Object.create(null);
    // The run's `progress` is written with the events that move it.
    let completed = 0;
    for (const step of run.steps) {
      // Completed steps keep their outputs, also across retries.
      const done = find(events, 'step.completed', step.id);
      if (done) {
        outputs[step.id] = done.data?.output ?? null;
        completed++;
        continue;
      }
      const failed = find(attempt, 'step.failed', step.id);
      if (failed) return fail(step.id, String(failed.data?.error ?? 'step failed'), false);
      if (deadline && deadline.remainingMs() < stepBudgetMs(step)) {
        await flush();
        throw new OutOfTime();
      }
      if (!find(attempt, 'step.started', step.id)) {
        // A retried run (pending) or one resumed after a decision runs again from here.
        const resumed: RunUpdate =
          status === 'running' ? {} : { status: 'running', started_at: run.started_at ?? nowIso() };
        await add('step.started', `Step ${step.id} (${step.kind}) started`, step.id, undefined, {
          ...resumed,
          current_step: step.id,
        });
      }
      const ctx = { values: run.values, outputs };
      if (step.kind === 'approval') {
        const error = await this.awaitDecision(run, step, find(attempt, 'step.waiting', step.id), ctx, add, flush);
        if (error) await fail(step.id, error, true);
        return;
      }
      let outcome: StepOutcome;
      if (step.kind === 'render') {
        outcome = await this.steps.execute(step, ctx);
      } else {
        await flush();
        const watched = await this.whileWatched(run.correlation_id, (cancelled) =>
          this.steps.execute(step, ctx, cancelled),
        );
        // Cancelled meanwhile: `run.cancelled` is the run's last event; re-read, nothing more is written.
        if (watched === CANCELLED) throw new IndexTaken();
        outcome = watched;
      }
      if (!outcome.ok) {
        log.info('crew step failed', { step_id: step.id, error: outcome.error });
        return fail(step.id, outcome.error, true);
      }
      completed++;
      await add(
        'step.completed',
        `Step ${step.id} completed`,
        step.id,
        { output: outcome.output },
        { completed_steps: completed, current_step: null },
      );
      outputs[step.id] = outcome.output;
    }
    await add(
      'run.completed',
      'Run completed',
      undefined,
      { outputs: boundOutputs(outputs) },
      { status: 'succeeded', finished_at: nowIso() },
    );
    await flush();
    log.info('crew run completed', { events: next });
  }

  /**
   * An `approval` step: the first time, `step.waiting` (status `waiting`) is written and the
   * expiry timer armed; the run then holds nothing until a decision (the decision endpoint
   * writes the outcome and queues the run) or the timer (a delayed message, at most 15 min
   * at a time) brings it back. Answers the failure when the step expired, else undefined.
   */
  private async awaitDecision(
    run: RunItem,
    step: ApprovalStep,
    waiting: CrewEvent | undefined,
    ctx: RenderContext,
    add: (
      type: EventType,
      message: string,
      stepId?: string,
      data?: Record<string, unknown>,
      fields?: RunUpdate,
    ) => Promise<void>,
    flush: () => Promise<void>,
  ): Promise<string | undefined> {
    let expiresMs: number;
    if (!waiting) {
      expiresMs = Date.now() + step.timeout_seconds * 1000;
      const role = step.role ?? 'approver';
      await add(
        'step.waiting',
        `Step ${step.id} waits for a decision by a person with the role '${role}'`,
        step.id,
        {
          prompt: capText(render(step.prompt, ctx), MAX_PROMPT_BYTES),
          role,
          expires_at: new Date(expiresMs).toISOString(),
        },
        { status: 'waiting', current_step: step.id },
      );
      await flush();
    } else {
      expiresMs = Date.parse(String(waiting.data?.expires_at));
      if (!(Date.now() < expiresMs)) return `no decision by ${String(waiting.data?.expires_at)}: the approval expired`;
      await flush();
    }
    if (!this.timers) throw new Error('an approval step needs the run timer (the crew-run queue)');
    await this.timers.after(
      run.correlation_id,
      Math.min(MAX_TIMER_SECONDS, Math.max(0, Math.ceil((expiresMs - Date.now()) / 1000))),
    );
    return undefined;
  }

  /**
   * Runs `work` with a signal that aborts once the run is cancelled: the run is read every
   * CANCEL_CHECK_MS, or at once when this process changes it (the local platform's API).
   */
  private async whileWatched<T>(
    correlationId: string,
    work: (cancelled: AbortSignal) => Promise<T>,
  ): Promise<T | typeof CANCELLED> {
    const controller = new AbortController();
    let working = true;
    const watch = (async () => {
      while (working) {
        await this.signals.next(correlationId, CANCEL_CHECK_MS);
        if (!working) return;
        try {
          if ((await this.runs.get(correlationId))?.status === 'cancelled') {
            controller.abort(new Error('the run was cancelled'));
            return;
          }
        } catch (err) {
          // a failed check is tried again at the next one
          logger.warn('crew run: cancellation check failed', { correlation_id: correlationId, error: err as Error });
        }
      }
    })();
    try {
      const result = await work(controller.signal);
      return controller.signal.aborted ? CANCELLED : result;
    } finally {
      working = false;
      this.signals.notify(correlationId);
      await watch;
    }
  }

  private event(
    run: RunItem,
    index: number,
    type: EventType,
    message: string,
    stepId?: string,
    data?: Record<string, unknown>,
  ): CrewEvent {
    return {
      index,
      correlation_id: run.correlation_id,
      type,
      timestamp: nowIso(),
      ...(stepId ? { step_id: stepId } : {}),
      message: capText(message, MAX_MESSAGE_BYTES),
      ...(data ? { data } : {}),
    };
  }
}
