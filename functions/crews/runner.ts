import { runChange } from './events.js';
import { logger } from '../../shared/logger.js';
import { nowIso } from '../../shared/time.js';
import { boundOutputs, capText, MAX_MESSAGE_BYTES } from './limits.js';
import type { CrewEvent, EventType } from './schemas.js';
import type { StepOutcome } from './steps.js';
import type { RunItem, RunStore, RunUpdate } from './store.js';
import { InProcessRunSignals, type RunSignals } from './signals.js';
import type { RenderContext } from './templating.js';

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
      return margin;
  }
}

export type ProcessResult = 'done' | 'continue-later';

const TERMINAL = new Set(['run.completed', 'run.failed', 'run.cancelled']);
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
      const events = await this.runs.allEvents(correlationId);
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
      if (events.some((e) => TERMINAL.has(e.type))) return;
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
    if (events.some((e) => TERMINAL.has(e.type))) return;
    let next = events.length;
    const log = logger.createChild({ persistentKeys: { correlation_id: run.correlation_id } });
    const append = async (
      type: EventType,
      message: string,
      stepId?: string,
      data?: Record<string, unknown>,
      update?: RunUpdate,
    ) => {
      const event = this.event(run, next, type, message, stepId, data);
      const at = update?.finished_at ?? update?.started_at ?? event.timestamp;
      const change = update?.status ? runChange(update.status, at) : undefined;
      if (!(await this.runs.append(run, event, update, change))) throw new IndexTaken();
      next++;
    };
    const stepEvent = (type: EventType, id: string) => events.find((e) => e.type === type && e.step_id === id);

    if (!events.some((e) => e.type === 'run.started')) {
      await append('run.started', 'Run started', undefined, undefined, { status: 'running', started_at: nowIso() });
    }
    // Keyed by step ids (the template's names): no inherited keys.
    const outputs: Record<string, unknown> = Object.create(null);
    // The run's `progress` is written with the events that move it.
    let completed = 0;
    for (const step of run.steps) {
      const done = stepEvent('step.completed', step.id);
      if (done) {
        outputs[step.id] = done.data?.output ?? null;
        completed++;
        continue;
      }
      const failed = stepEvent('step.failed', step.id);
      if (failed) {
        const error = String(failed.data?.error ?? 'step failed');
        await append(
          'run.failed',
          `Run failed at step ${step.id}`,
          undefined,
          { error },
          { status: 'failed', finished_at: nowIso(), error },
        );
        return;
      }
      if (deadline && deadline.remainingMs() < stepBudgetMs(step)) throw new OutOfTime();
      if (!stepEvent('step.started', step.id))
        await append('step.started', `Step ${step.id} (${step.kind}) started`, step.id, undefined, {
          current_step: step.id,
        });
      const outcome = await this.whileWatched(run.correlation_id, (cancelled) =>
        this.steps.execute(step, { values: run.values, outputs }, cancelled),
      );
      // Cancelled meanwhile: `run.cancelled` is the run's last event; re-read, nothing more is written.
      if (outcome === CANCELLED) throw new IndexTaken();
      if (!outcome.ok) {
        log.info('crew step failed', { step_id: step.id, error: outcome.error });
        await append('step.failed', `Step ${step.id} failed: ${outcome.error}`, step.id, { error: outcome.error });
        await append(
          'run.failed',
          `Run failed at step ${step.id}`,
          undefined,
          { error: outcome.error },
          {
            status: 'failed',
            finished_at: nowIso(),
            error: outcome.error,
          },
        );
        return;
      }
      completed++;
      await append(
        'step.completed',
        `Step ${step.id} completed`,
        step.id,
        { output: outcome.output },
        { completed_steps: completed, current_step: null },
      );
      outputs[step.id] = outcome.output;
    }
    await append(
      'run.completed',
      'Run completed',
      undefined,
      { outputs: boundOutputs(outputs) },
      { status: 'succeeded', finished_at: nowIso() },
    );
    log.info('crew run completed', { events: next });
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
