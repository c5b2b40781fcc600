import { randomUUID } from 'node:crypto';
import { runChange } from './events.js';
import { logger } from '../../shared/logger.js';
import { type Clock, systemClock } from '../../shared/clock.js';
import { boundOutputs, capText, MAX_MESSAGE_BYTES, MAX_PROMPT_BYTES } from './limits.js';
import type { ApprovalStep, RunLogEntry, RunLogEntryType } from './schemas.js';
import type { StepOutcome } from './steps.js';
import {
  type EarlierChange,
  FINISHED_STATUSES,
  type RunItem,
  type RunLimit,
  type RunStore,
  type RunUpdate,
  type SlotCondition,
  type Slots,
} from './store.js';
import { InProcessRunSignals, type RunSignals } from './signals.js';
import { type RenderContext, render } from './templating.js';

export interface StepRunner {
  execute(step: RunItem['steps'][number], ctx: RenderContext, cancelled?: AbortSignal): Promise<StepOutcome>;
}

/** While a step runs, the run is read this often to see whether it was cancelled (one GetItem). */
export const CANCEL_CHECK_MS = 1_000;

/**
 * How long a delivery's lease on a run lasts unless renewed: the lease is what makes a
 * delivery the run's one executor. Every write of the runner renews it and, while a step
 * runs, the cancellation check renews it instead of reading once a third of it has passed
 * (about every 10 s), so two renewals may be late before another delivery may take over;
 * a run whose worker died is taken over at most this long after its last renewal.
 */
export const LEASE_MS = 30_000;

/** Another delivery of the same run wrote the index first; progress is re-read. */
class IndexTaken extends Error {}

/** What a watched step answers when the run was cancelled while it ran (or its lease was lost). */
const CANCELLED = Symbol('cancelled');

/** What a watched step answers when the process stopped while it ran. */
const STOPPED = Symbol('stopped');

/** What a watched step answers when the run outlived its `run_timeout_seconds` while it ran. */
const TIMED_OUT = Symbol('timed out');

/** Why a watched step was abandoned: the run's deadline passed. */
class RunTimedOut extends Error {}

/** The process is stopping: the run is left as it is (a started step stays started) for the next executor. */
class Stopped extends Error {}

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

/** A timer message with nothing left to do is acknowledged (and said so in the log). */
function spent(correlationId: string, timer: StepTimer): ProcessResult {
  logger.info('crew approval timer has nothing to do: its step was decided or the run went on', {
    correlation_id: correlationId,
    step_id: timer.step_id,
  });
  return 'done';
}

const TERMINAL = new Set(['run.completed', 'run.failed', 'run.cancelled']);

/** The events of the run's latest attempt: those after its last `run.retried` (all, when never retried). */
export function currentAttempt(events: readonly RunLogEntry[]): RunLogEntry[] {
  let last = -1;
  events.forEach((e, i) => {
    if (e.type === 'run.retried') last = i;
  });
  return events.slice(last + 1);
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
 * A message about a slot of the run's concurrency limit (run-limits.ts): `wait` brings a run
 * that waits for one back to try again (and is sent again while it waits); `freed` is sent
 * once, at once, to the oldest waiting run when another run let its slot go.
 */
export interface SlotWake {
  readonly slot: 'wait' | 'freed';
}

/** What a message is for beyond a plain delivery: an approval's expiry, or a slot. */
export type RunWake = StepTimer | SlotWake;

/**
 * Brings a run back to the worker after a delay: the expiry of an `approval` step (with its
 * `timer`), a run waiting for a slot, or a message that found the run held by another
 * delivery (as it came); with no delay, the run a freed slot goes to.
 */
export interface RunTimer {
  after(correlationId: string, delaySeconds: number, timer?: RunWake): Promise<void>;
}

/** What the runner reads and writes of runs (RunStore's methods it uses). */
export type RunnerStore = Pick<
  RunStore,
  | 'get'
  | 'allLogEntries'
  | 'append'
  | 'takeLease'
  | 'renewLease'
  | 'releaseLease'
  | 'slotQueue'
  | 'slotQueueCount'
  | 'slots'
  | 'takeSlot'
  | 'renewSlot'
  | 'releaseSlot'
>;

/** This delivery's lease: `held` while it may hold it (a write whose outcome is unknown included). */
interface Lease {
  readonly owner: string;
  until: number;
  held: boolean;
}

/**
 * This delivery's hold on a slot of the run's concurrency limit. A slot is held by the run
 * (its correlation id), so a delivery that takes over the run keeps it; the delivery that
 * wrote as the run's executor while holding it (`ours`) lets it go at the end, unless the run
 * goes on in another delivery (`keep`: out of time, the process stopping), where it lapses
 * unless that delivery renews it.
 */
interface SlotHold {
  limit?: RunLimit;
  taken: boolean;
  until: number;
  ours: boolean;
  keep: boolean;
}

/** A slot taken, or none free: when to try again, and the run's place in the line. */
type SlotAnswer = { readonly taken: true } | { readonly taken: false; retryAt: number; position(): Promise<number> };

/** Tries to take a slot when its item changed between read and write. */
const SLOT_ROUNDS = 5;

/** Lapsed holders dropped from a slot item in one write (a bound on the write's size). */
const MAX_DROPPED = 25;

/**
 * When the run's current attempt times out: `run_timeout_seconds` after it started (its
 * `run.started`, or a retried run's first `step.started` after `run.retried`); undefined
 * without a timeout or before it started.
 */
function timeoutOf(run: RunItem, attempt: readonly RunLogEntry[]): number | undefined {
  if (!run.run_timeout_seconds) return undefined;
  const start = attempt.find((e) => e.type === 'run.started' || e.type === 'step.started');
  return start ? Date.parse(start.timestamp) + run.run_timeout_seconds * 1000 : undefined;
}

/**
 * The timer has nothing left to do: its wait is not in the run's latest attempt (another
 * wait, or none), or the run went on after the step's outcome. A decided step with nothing
 * after it is continued (the decision's own message may have been lost: service.ts).
 */
function timerSpent(attempt: readonly RunLogEntry[], timer: StepTimer): boolean {
  const waited = attempt.findIndex(
    (e) => e.type === 'step.waiting' && e.step_id === timer.step_id && e.data?.expires_at === timer.expires_at,
  );
  if (waited < 0) return true;
  const outcome = attempt.findIndex(
    (e, i) => i > waited && e.step_id === timer.step_id && (e.type === 'step.completed' || e.type === 'step.failed'),
  );
  return outcome >= 0 && outcome < attempt.length - 1;
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
 *
 * One delivery executes a run at a time: each write of the runner takes or renews a lease
 * on the run (LEASE_MS), no step with I/O runs without it, and the last write of a
 * delivery lets it go. A delivery that finds the lease held by another comes back when it
 * would lapse (a living holder renews it; a dead one's is then taken over), so no message
 * is lost and no step runs twice at once.
 */
export class CrewRunner {
  constructor(
    private readonly runs: RunnerStore,
    private readonly steps: StepRunner,
    /** Wakes the cancellation check at once when the run changes in this process. */
    private readonly signals: RunSignals = new InProcessRunSignals(),
    /** Arms the expiry of `approval` steps, and brings back a message that found its run held. */
    private readonly timers?: RunTimer,
    /**
     * The process is stopping: a running `wait`, `http` or `llm` step is abandoned at once
     * (no event: it stays started, for the next executor to run again), no step starts, the
     * lease is let go and the delivery ends without an error.
     */
    private readonly stop?: AbortSignal,
    /**
     * The time the runner reads: leases, `run_timeout_seconds`, an approval's expiry, every
     * event's timestamp, and the cancellation check's pauses.
     */
    private readonly clock: Clock = systemClock,
  ) {
    // One listener for every step under way (a listener per step would pile up on the signal).
    stop?.addEventListener(
      'abort',
      () => {
        for (const step of this.watched) step.abort(new Error('the process is stopping'));
      },
      { once: true },
    );
  }

  /** The signals of the steps with I/O under way in this runner. */
  private readonly watched = new Set<AbortController>();

  /**
   * Advances the run as far as it can. With a deadline, a step that might not finish in
   * the time left is not started: the answer is 'continue-later' and the caller queues
   * the run again, so a long run never uses up its delivery attempts.
   */
  async process(correlationId: string, deadline?: Deadline, wake?: RunWake, carried?: RunItem): Promise<ProcessResult> {
    // Stopping: nothing is started; the next start queues every unfinished run again.
    if (this.stop?.aborted) return 'done';
    const timer = wake && 'step_id' in wake ? wake : undefined;
    const slotWake = wake && 'slot' in wake ? wake : undefined;
    const lease: Lease = { owner: randomUUID(), until: 0, held: false };
    const slot: SlotHold = { taken: false, until: 0, ours: false, keep: false };
    try {
      for (let attempt = 0; attempt < MAX_RESUMES; attempt++) {
        /*
         * A new run's message carries the run as stored: no read. Every write is conditioned
         * on the run's event count, so a message handed again (the run went on meanwhile)
         * writes nothing and its delivery reads the run as any other.
         */
        const run = attempt === 0 && carried ? carried : await this.runs.get(correlationId);
        if (!run) {
          logger.warn('crew run not found; message dropped', { correlation_id: correlationId });
          return 'done';
        }
        if (FINISHED_STATUSES.has(run.status)) {
          // Nothing runs a finished run any more: a slot this delivery took for it goes.
          slot.ours ||= slot.taken;
          // A freed slot's message (sent once) that found its run finished meanwhile (cancelled
          // while it waited in line) is passed on to the next in line, or nobody is woken.
          if (slotWake?.slot === 'freed' && run.limit && !slot.ours) await this.letSlotGo(run.limit, correlationId);
          return 'done';
        }
        /*
         * A timer of a step the run has left (it runs or waits at another) has nothing to do:
         * judged as the message arrives; once this delivery went on with the run, a re-read
         * (another write came first) carries on like any delivery.
         */
        if (timer && attempt === 0 && run.current_step && run.current_step !== timer.step_id)
          return spent(correlationId, timer);
        // Likewise a slot message for a run that waits for none: the message that started it carries it.
        if (slotWake && attempt === 0 && run.status !== 'pending') return 'done';
        if (run.lease && run.lease.owner !== lease.owner && run.lease.until > this.clock.now()) {
          slot.ours = false;
          // A freed slot's message is sent once: the run's own messages bring it back.
          if (slotWake?.slot !== 'freed') await this.later(correlationId, run.lease.until, wake);
          return 'done';
        }
        // A run just queued has only its `run.queued` (nothing in it the worker needs): no Query.
        const events = run.event_count <= 1 ? [] : await this.runs.allLogEntries(correlationId);
        if (timer && attempt === 0 && timerSpent(currentAttempt(events), timer)) return spent(correlationId, timer);
        try {
          await this.advance(run, events, deadline, lease, slot, slotWake);
          return 'done';
        } catch (err) {
          if (err instanceof OutOfTime) return 'continue-later';
          if (err instanceof Stopped) {
            logger.info('crew run left as it is: the process is stopping', { correlation_id: correlationId });
            return 'done';
          }
          if (!(err instanceof IndexTaken)) throw err;
        }
      }
      throw new Error(`crew run ${correlationId}: gave up after ${MAX_RESUMES} concurrent-write conflicts`);
    } finally {
      if (lease.held) await this.release(correlationId, lease);
      if (slot.limit && slot.taken && slot.ours && !slot.keep) await this.letSlotGo(slot.limit, correlationId);
    }
  }

  /**
   * The run is held by another delivery: this message comes back just after that lease
   * would lapse. A living holder renews it (the message then comes back again, until the
   * holder is done); a dead one's lapses and the message takes the run over.
   */
  private async later(correlationId: string, heldUntil: number, timer: RunWake | undefined): Promise<void> {
    if (this.stop?.aborted) return;
    if (!this.timers) throw new Error('a run held by another delivery needs the run timer (the crew-run queue)');
    const delaySeconds = Math.min(MAX_TIMER_SECONDS, Math.max(1, Math.ceil((heldUntil - this.clock.now()) / 1000) + 1));
    logger.info('crew run held by another delivery; the message comes back later', {
      correlation_id: correlationId,
      delay_seconds: delaySeconds,
    });
    await this.timers.after(correlationId, delaySeconds, timer);
  }

  /**
   * Takes a slot of the run's limit for it (or keeps the one it holds): only while fewer than
   * `max` runs hold one and no older run waits in the key's line for one (oldest first). The
   * line is read first (one Query); with nobody ahead, one conditional write takes a slot
   * while fewer than `max` hold one; otherwise, or when lapsed holders fill the item, the
   * slots are read and taken as read, the lapsed holders dropped (a killed worker's run holds
   * its slot only until its lease lapses).
   */
  private async holdSlot(run: RunItem, limit: RunLimit, slot: SlotHold): Promise<SlotAnswer> {
    const ahead = await this.runs.slotQueue(limit.key, limit.max, run);
    let seen: Slots | undefined | null = null;
    for (let round = 0; round < SLOT_ROUNDS; round++) {
      const now = this.clock.now();
      let when: SlotCondition;
      if (seen === null && ahead.length > 0) {
        seen = await this.runs.slots(limit.key);
        continue;
      }
      if (seen === null) when = { fewerThan: limit.max };
      else {
        const holders = seen?.holders ?? {};
        const others = Object.entries(holders).filter(([id]) => id !== run.correlation_id);
        const live = others.filter(([, until]) => until > now);
        // A run in the line that holds a slot already is about to start: it waits for none.
        const waiting = ahead.filter((id) => !((holders[id] ?? 0) > now));
        // This run's own slot, still held (it goes on in a new delivery), is kept whoever waits.
        const mine = (holders[run.correlation_id] ?? 0) > now;
        if (!mine && live.length + waiting.length >= limit.max) {
          const full = live.length >= limit.max;
          return {
            taken: false,
            // A holder renews its lease, a dead one's lapses: try again then. Behind older
            // runs only, the last of them to start lets a slot go and sends this run a message.
            retryAt: full ? Math.min(...live.map(([, until]) => until)) : now + LEASE_MS,
            position: async () =>
              ahead.length < limit.max
                ? waiting.length + 1
                : (await this.runs.slotQueueCount(limit.key, run)) - (ahead.length - waiting.length) + 1,
          };
        }
        const lapsed = others.filter(([, until]) => until <= now).map(([id]) => id);
        when = { as: seen, dropping: lapsed.slice(0, MAX_DROPPED) };
      }
      const until = now + LEASE_MS;
      const expiresAt = Math.max(run.expires_at, Math.ceil(until / 1000) + 86_400);
      const out = await this.runs.takeSlot(limit.key, run.correlation_id, until, expiresAt, when);
      if (out.taken) {
        Object.assign(slot, { limit, taken: true, until });
        return { taken: true };
      }
      seen = out.slots;
    }
    // Others kept changing the slots: this run tries again shortly.
    return {
      taken: false,
      retryAt: this.clock.now() + 1_000,
      position: async () => (await this.runs.slotQueueCount(limit.key, run)) + 1,
    };
  }

  /**
   * A run waiting for a slot comes back at `retryAt`, or at its deadline when that is sooner.
   * A `freed` message is not sent again: the run's own message (`wait`) keeps coming back.
   */
  private async backForSlot(
    correlationId: string,
    retryAt: number,
    timesOutAt: number | undefined,
    wake: SlotWake | undefined,
  ): Promise<void> {
    if (wake?.slot === 'freed' || this.stop?.aborted) return;
    if (!this.timers) throw new Error('a run waiting for a slot needs the run timer (the crew-run queue)');
    const at = Math.min(retryAt, timesOutAt ?? Number.POSITIVE_INFINITY);
    const delaySeconds = Math.min(MAX_TIMER_SECONDS, Math.max(1, Math.ceil((at - this.clock.now()) / 1000) + 1));
    logger.info('crew run waits for a slot; the message comes back later', {
      correlation_id: correlationId,
      delay_seconds: delaySeconds,
    });
    await this.timers.after(correlationId, delaySeconds, { slot: 'wait' });
  }

  /**
   * Lets the run's slot go, and sends the oldest run waiting in its key's line a message at
   * once (it starts now, not when its own message comes back). A failure leaves the slot to
   * lapse, and the waiting runs to their own messages.
   */
  private async letSlotGo(limit: RunLimit, correlationId: string): Promise<void> {
    try {
      const left = await this.runs.releaseSlot(limit.key, correlationId);
      const now = this.clock.now();
      const held = Object.values(left).filter((until) => until > now).length;
      if (held >= limit.max || !this.timers) return;
      const line = await this.runs.slotQueue(limit.key, held + 1);
      const next = line.find((id) => !((left[id] ?? 0) > now));
      if (next) await this.timers.after(next, 0, { slot: 'freed' });
    } catch (err) {
      logger.warn('crew run: could not let its slot go; it lapses', {
        correlation_id: correlationId,
        error: err as Error,
      });
    }
  }

  /** Lets this delivery's lease go; a failure leaves it to lapse. */
  private async release(correlationId: string, lease: Lease): Promise<void> {
    try {
      await this.runs.releaseLease(correlationId, lease.owner);
      lease.held = false;
    } catch (err) {
      logger.warn('crew run: could not let its lease go; it lapses', {
        correlation_id: correlationId,
        error: err as Error,
      });
    }
  }

  /** Takes the lease before a step with I/O when no write took it (a started step resumed). */
  private async hold(run: RunItem, eventCount: number, lease: Lease): Promise<void> {
    const now = this.clock.now();
    const until = now + LEASE_MS;
    lease.held = true;
    if (!(await this.runs.takeLease(run.correlation_id, { owner: lease.owner, now, until }, eventCount))) {
      lease.held = false;
      throw new IndexTaken();
    }
    lease.until = until;
  }

  /** The message kept failing (dead-letter queue): the run ends with `run.failed`. */
  async failAbandoned(correlationId: string, reason: string): Promise<void> {
    for (let attempt = 0; attempt < MAX_RESUMES; attempt++) {
      const run = await this.runs.get(correlationId);
      if (!run) return;
      const events = await this.runs.allLogEntries(correlationId);
      if (currentAttempt(events).some((e) => TERMINAL.has(e.type))) return;
      const error = `The run was abandoned after repeated failures: ${reason}`;
      const at = this.clock.iso();
      const ok = await this.runs.append(
        run,
        this.event(run, events.length, 'run.failed', error, undefined, { error }),
        { status: 'failed', finished_at: at, error },
        runChange('failed', at),
      );
      if (ok) {
        // Its deliveries are given up: its slot, if one holds it, goes to the next in line.
        if (run.limit) await this.letSlotGo(run.limit, correlationId);
        return;
      }
    }
  }

  private async advance(
    run: RunItem,
    events: RunLogEntry[],
    deadline: Deadline | undefined,
    lease: Lease,
    slot: SlotHold,
    slotWake: SlotWake | undefined,
  ): Promise<void> {
    // A retried run's log goes on after `run.retried`: what came before it counts only for completed steps.
    const attempt = currentAttempt(events);
    if (attempt.some((e) => TERMINAL.has(e.type))) return;
    const log = logger.createChild({ persistentKeys: { correlation_id: run.correlation_id } });
    /*
     * Events are gathered and written together where nothing observable happens between
     * them: a step's closing event with the next step's opening one, and render steps (no
     * I/O) entirely, so a run of render steps is one write from `run.started` to
     * `run.completed`. Before a step with I/O everything gathered is written, so its
     * `step.started` is there while it runs. Each status change in a write is its own
     * domain event, written with it (the run as that change left it).
     */
    let next = Math.max(events.length, run.event_count);
    let pending: RunLogEntry[] = [];
    let update: RunUpdate = {};
    /** The status changes gathered, each with the run's fields and event count as it left them. */
    let changes: EarlierChange[] = [];
    /** The run as this delivery's last write left it (what the next write's events describe). */
    let written: RunItem = run;
    let status = run.status;
    let lastType = events.at(-1)?.type;
    // The run's deadline (`run_timeout_seconds`), from the start of this attempt; set when it starts.
    let timesOutAt = timeoutOf(run, attempt);
    // Each write takes or renews the lease; `release` lets it go with the delivery's last write.
    const flush = async (release = false) => {
      if (pending.length === 0) return;
      const now = this.clock.now();
      const until = release ? null : now + LEASE_MS;
      const held = lease.held;
      lease.held = true;
      const last = changes.at(-1);
      if (
        !(await this.runs.append(
          written,
          pending,
          update,
          last?.change,
          { owner: lease.owner, now, until },
          changes.slice(0, -1),
        ))
      ) {
        lease.held = held;
        throw new IndexTaken();
      }
      if (until === null) lease.held = false;
      else lease.until = until;
      // Written as the run's executor while holding its slot: this delivery lets the slot go.
      if (slot.taken) slot.ours = true;
      next += pending.length;
      written = {
        ...written,
        ...update,
        event_count: next,
        event_sequence: (written.event_sequence ?? 0) + changes.length,
      };
      pending = [];
      update = {};
      changes = [];
    };
    const add = async (
      type: RunLogEntryType,
      message: string,
      stepId?: string,
      data?: Record<string, unknown>,
      fields?: RunUpdate,
    ) => {
      const entry = this.event(run, next + pending.length, type, message, stepId, data);
      pending.push(entry);
      Object.assign(update, fields);
      if (fields?.status) {
        status = fields.status;
        const at = fields.finished_at ?? fields.started_at ?? entry.timestamp;
        changes.push({
          change: runChange(fields.status, at),
          update: { ...update },
          eventCount: next + pending.length,
        });
      }
      lastType = type;
      if (timesOutAt === undefined && run.run_timeout_seconds && (type === 'run.started' || type === 'step.started'))
        timesOutAt = this.clock.now() + run.run_timeout_seconds * 1000;
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
          finished_at: this.clock.iso(),
          error,
        },
      );
      await flush(true);
    };
    const find = (within: RunLogEntry[], type: RunLogEntryType, id: string) =>
      within.find((e) => e.type === type && e.step_id === id);
    // Outlived `run_timeout_seconds`: `run.timed_out`, then `run.failed`, in the run's last write.
    const timedOut = async () => {
      const seconds = run.run_timeout_seconds!;
      const error = `timed out after ${seconds} s`;
      await add('run.timed_out', `Run timed out: unfinished ${seconds} s after it started`, undefined, {
        timeout_seconds: seconds,
      });
      await add(
        'run.failed',
        `Run failed: ${error}`,
        undefined,
        { error },
        { status: 'failed', finished_at: this.clock.iso(), error },
      );
      await flush(true);
      log.info('crew run timed out', { timeout_seconds: seconds });
    };
    const overdue = () => timesOutAt !== undefined && this.clock.now() >= timesOutAt;
    /*
     * A run with a concurrency limit holds a slot while it runs: taken before it starts, or
     * goes on after an approval (a run waiting for one holds none), and renewed with its
     * lease. None free: the run waits `pending` (again, when it had started; not when a step
     * of it is under way, which can only be a step resumed after its worker died), with
     * `run.throttled` once per wait, and comes back later. False when it waits.
     */
    const slotted = async (stepUnderWay: boolean): Promise<boolean> => {
      const limit = run.limit;
      if (!limit) return true;
      if (slot.taken) {
        if (slot.until - this.clock.now() >= (LEASE_MS * 2) / 3) return true;
        const until = this.clock.now() + LEASE_MS;
        if (await this.runs.renewSlot(limit.key, run.correlation_id, until)) {
          slot.until = until;
          return true;
        }
        // It lapsed and went to another run: one is taken again, as any run takes one.
        slot.taken = false;
      }
      const got = await this.holdSlot(run, limit, slot);
      if (got.taken) return true;
      if (lastType !== 'run.throttled') {
        const position = await got.position();
        await add(
          'run.throttled',
          `Run waits for a slot of its concurrency limit (${limit.max} at once): position ${position} in line`,
          undefined,
          { position },
          status === 'running' && !stepUnderWay ? { status: 'pending' } : undefined,
        );
      }
      await flush(true);
      await this.backForSlot(run.correlation_id, got.retryAt, timesOutAt, slotWake);
      return false;
    };

    if (overdue()) return timedOut();
    if (!events.some((e) => e.type === 'run.started')) {
      if (!(await slotted(false))) return;
      await add('run.started', 'Run started', undefined, undefined, {
        status: 'running',
        started_at: this.clock.iso(),
      });
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
      if (this.stop?.aborted) {
        slot.keep = true;
        await flush(true);
        throw new Stopped();
      }
      if (deadline && deadline.remainingMs() < stepBudgetMs(step)) {
        slot.keep = true;
        await flush(true);
        throw new OutOfTime();
      }
      if (overdue()) return timedOut();
      // An approval that waits needs no slot (it runs nothing); any other step runs in one.
      const waitsForDecision = step.kind === 'approval' && find(attempt, 'step.waiting', step.id);
      if (!waitsForDecision && !(await slotted(find(attempt, 'step.started', step.id) !== undefined))) return;
      if (!find(attempt, 'step.started', step.id)) {
        // A retried run (pending) or one resumed after a decision runs again from here.
        const resumed: RunUpdate =
          status === 'running' ? {} : { status: 'running', started_at: run.started_at ?? this.clock.iso() };
        await add('step.started', `Step ${step.id} (${step.kind}) started`, step.id, undefined, {
          ...resumed,
          current_step: step.id,
        });
      }
      const ctx = { values: run.values, outputs };
      if (step.kind === 'approval') {
        const error = await this.awaitDecision(
          run,
          step,
          find(attempt, 'step.waiting', step.id),
          ctx,
          add,
          flush,
          timesOutAt,
        );
        if (error) await fail(step.id, error, true);
        return;
      }
      let outcome: StepOutcome;
      if (step.kind === 'render') {
        outcome = await this.steps.execute(step, ctx);
      } else {
        await flush();
        if (!lease.held) await this.hold(run, next, lease);
        const watched = await this.whileWatched(
          run.correlation_id,
          lease,
          (cancelled) => this.steps.execute(step, ctx, cancelled),
          slot,
          timesOutAt,
        );
        if (watched === STOPPED) {
          slot.keep = true;
          throw new Stopped();
        }
        // Abandoned at the deadline: the step stays started, and the run ends timed out.
        if (watched === TIMED_OUT) return timedOut();
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
      { status: 'succeeded', finished_at: this.clock.iso() },
    );
    await flush(true);
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
    waiting: RunLogEntry | undefined,
    ctx: RenderContext,
    add: (
      type: RunLogEntryType,
      message: string,
      stepId?: string,
      data?: Record<string, unknown>,
      fields?: RunUpdate,
    ) => Promise<void>,
    flush: (release?: boolean) => Promise<void>,
    timesOutAt: number | undefined,
  ): Promise<string | undefined> {
    let expiresMs: number;
    if (!waiting) {
      const since = this.clock.now();
      expiresMs = since + step.timeout_seconds * 1000;
      const role = step.role ?? 'approver';
      const prompt = capText(render(step.prompt, ctx), MAX_PROMPT_BYTES);
      const expiresAt = new Date(expiresMs).toISOString();
      await add(
        'step.waiting',
        `Step ${step.id} waits for a decision by a person with the role '${role}'`,
        step.id,
        { prompt, role, expires_at: expiresAt },
        {
          status: 'waiting',
          current_step: step.id,
          // The approvers' inbox lists the step, and its role's holders may read the run.
          waiting: { step_id: step.id, role, prompt, since: new Date(since).toISOString(), expires_at: expiresAt },
          approval_roles: [...new Set([...(run.approval_roles ?? []), role])],
        },
      );
      await flush(true);
    } else {
      expiresMs = Date.parse(String(waiting.data?.expires_at));
      if (!(this.clock.now() < expiresMs))
        return `no decision by ${String(waiting.data?.expires_at)}: the approval expired`;
      await flush(true);
    }
    if (!this.timers) throw new Error('an approval step needs the run timer (the crew-run queue)');
    // The timer says which wait it ends: once the step is decided, or the run went on, it does
    // nothing. It comes back at the run's deadline when that is sooner: the run then times out.
    const dueMs = Math.min(expiresMs, timesOutAt ?? Number.POSITIVE_INFINITY);
    await this.timers.after(
      run.correlation_id,
      Math.min(MAX_TIMER_SECONDS, Math.max(0, Math.ceil((dueMs - this.clock.now()) / 1000))),
      { step_id: step.id, expires_at: new Date(expiresMs).toISOString() },
    );
    return undefined;
  }

  /**
   * Runs `work` with a signal that aborts once the run is cancelled, its lease (or its slot)
   * is lost, its deadline passes or the process stops: the run is read every CANCEL_CHECK_MS,
   * or at once when this process changes it (the local platform's API); once a third of the
   * lease has passed, that read is the lease's renewal (one call either way; a run holding a
   * slot renews it at the same time, a second call).
   */
  private async whileWatched<T>(
    correlationId: string,
    lease: Lease,
    work: (cancelled: AbortSignal) => Promise<T>,
    slot: SlotHold,
    timesOutAt: number | undefined,
  ): Promise<T | typeof CANCELLED | typeof STOPPED | typeof TIMED_OUT> {
    const controller = new AbortController();
    if (this.stop?.aborted) controller.abort(new Error('the process is stopping'));
    this.watched.add(controller);
    let working = true;
    const watch = (async () => {
      while (working) {
        const untilDeadline = timesOutAt === undefined ? CANCEL_CHECK_MS : Math.max(0, timesOutAt - this.clock.now());
        await this.signals.next(correlationId, Math.min(CANCEL_CHECK_MS, untilDeadline));
        if (!working) return;
        if (timesOutAt !== undefined && this.clock.now() >= timesOutAt) {
          controller.abort(new RunTimedOut('the run timed out'));
          return;
        }
        try {
          let run: RunItem | undefined;
          if (lease.until - this.clock.now() < (LEASE_MS * 2) / 3) {
            const until = this.clock.now() + LEASE_MS;
            const limit = slot.taken ? slot.limit : undefined;
            const [renewed, slotKept] = await Promise.all([
              this.runs.renewLease(correlationId, lease.owner, until),
              limit ? this.runs.renewSlot(limit.key, correlationId, until) : true,
            ]);
            run = renewed;
            if (!run) {
              lease.held = false;
              // The delivery that took the run over holds its slot now.
              slot.ours = false;
              slot.taken = false;
              controller.abort(new Error('another delivery took the run over'));
              return;
            }
            lease.until = until;
            if (!slotKept) {
              // It lapsed and went to another run: the step is abandoned, and the run takes one again.
              slot.taken = false;
              controller.abort(new Error('the run lost its slot'));
              return;
            }
            if (limit) slot.until = until;
          } else run = await this.runs.get(correlationId);
          if (run?.status === 'cancelled') {
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
      if (!controller.signal.aborted) return result;
      if (this.stop?.aborted) return STOPPED;
      return controller.signal.reason instanceof RunTimedOut ? TIMED_OUT : CANCELLED;
    } finally {
      working = false;
      this.watched.delete(controller);
      this.signals.notify(correlationId);
      await watch;
    }
  }

  private event(
    run: RunItem,
    index: number,
    type: RunLogEntryType,
    message: string,
    stepId?: string,
    data?: Record<string, unknown>,
  ): RunLogEntry {
    return {
      index,
      correlation_id: run.correlation_id,
      type,
      timestamp: this.clock.iso(),
      ...(stepId ? { step_id: stepId } : {}),
      message: capText(message, MAX_MESSAGE_BYTES),
      ...(data ? { data } : {}),
    };
  }
}
