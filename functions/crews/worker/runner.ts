import { randomUUID } from 'node:crypto';
import { holds, lapsedEntries, liveEntries } from '../../../shared/aws/leased-slots.js';
import { logger } from '../../../shared/logger.js';
import { type Clock, systemClock } from '../../../shared/clock.js';
import { AGAIN, retry } from '../../../shared/retry.js';
import {
  abandon,
  type Appended,
  currentAttempt,
  type Decision,
  decide,
  type Executed,
  type SlotState,
  type StepTimer,
  timerSpent,
} from './decide.js';
import type { RunLogEntry } from '../runs/run-schemas.js';
import type { StepOutcome } from './steps.js';
import {
  type EarlierChange,
  FINISHED_STATUSES,
  type RunItem,
  type RunLimit,
  type RunStore,
  type RunUpdate,
} from '../runs/run-store.js';
import type { SlotCondition, Slots, SlotStore } from '../runs/slot-store.js';
import { InProcessRunSignals, type RunSignals } from '../runs/signals.js';
import type { RenderContext } from '../templates/templating.js';

export { currentAttempt, type StepTimer } from './decide.js';

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
export const RUN_LEASE_MS = 30_000;

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

export type ProcessResult = 'done' | 'continue-later';

/** A timer message with nothing left to do is acknowledged (and said so in the log). */
function spent(correlationId: string, timer: StepTimer): ProcessResult {
  logger.info('crew approval timer has nothing to do: its step was decided or the run went on', {
    correlation_id: correlationId,
    step_id: timer.step_id,
  });
  return 'done';
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
  'get' | 'allLogEntries' | 'append' | 'takeLease' | 'renewLease' | 'releaseLease'
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

/** A slot item's holders map each run to its lease end itself. */
const leaseEnd = (until: number) => until;

/** Tries to take a slot when its item changed between read and write. */
const SLOT_ROUNDS = 5;

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
 * on the run (RUN_LEASE_MS), no step with I/O runs without it, and the last write of a
 * delivery lets it go. A delivery that finds the lease held by another comes back when it
 * would lapse (a living holder renews it; a dead one's is then taken over), so no message
 * is lost and no step runs twice at once.
 */
export class CrewRunner {
  constructor(
    private readonly runs: RunnerStore,
    /** The slots of runs' concurrency limits (runs/slot-store.ts). */
    private readonly slots: SlotStore,
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
        const entries = run.event_count <= 1 ? [] : await this.runs.allLogEntries(correlationId);
        if (timer && attempt === 0 && timerSpent(currentAttempt(entries), timer)) return spent(correlationId, timer);
        try {
          await this.advance(run, entries, deadline, lease, slot, slotWake);
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
    const ahead = await this.slots.slotQueue(limit.key, limit.max, run);
    let seen: Slots | undefined | null = null;
    for (let round = 0; round < SLOT_ROUNDS; round++) {
      const now = this.clock.now();
      let when: SlotCondition;
      if (seen === null && ahead.length > 0) {
        seen = await this.slots.slots(limit.key);
        continue;
      }
      if (seen === null) when = { fewerThan: limit.max };
      else {
        const holders = seen?.holders ?? {};
        const live = liveEntries(holders, leaseEnd, now).filter((id) => id !== run.correlation_id);
        // A run in the line that holds a slot already is about to start: it waits for none.
        const waiting = ahead.filter((id) => !holds(holders[id], now));
        // This run's own slot, still held (it goes on in a new delivery), is kept whoever waits.
        const mine = holds(holders[run.correlation_id], now);
        if (!mine && live.length + waiting.length >= limit.max) {
          const full = live.length >= limit.max;
          return {
            taken: false,
            // A holder renews its lease, a dead one's lapses: try again then. Behind older
            // runs only, the last of them to start lets a slot go and sends this run a message.
            retryAt: full ? Math.min(...live.map((id) => holders[id]!)) : now + RUN_LEASE_MS,
            position: async () =>
              ahead.length < limit.max
                ? waiting.length + 1
                : (await this.slots.slotQueueCount(limit.key, run)) - (ahead.length - waiting.length) + 1,
          };
        }
        when = { as: seen, dropping: lapsedEntries(holders, leaseEnd, now, run.correlation_id) };
      }
      const until = now + RUN_LEASE_MS;
      const expiresAt = Math.max(run.expires_at, Math.ceil(until / 1000) + 86_400);
      const out = await this.slots.takeSlot(limit.key, run.correlation_id, until, expiresAt, when);
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
      position: async () => (await this.slots.slotQueueCount(limit.key, run)) + 1,
    };
  }

  /**
   * A run waiting for a slot comes back at `at` (decide.ts: a slot's retry, or its deadline when sooner).
   * A `freed` message is not sent again: the run's own message (`wait`) keeps coming back.
   */
  private async backForSlot(correlationId: string, at: number, wake: SlotWake | undefined): Promise<void> {
    if (wake?.slot === 'freed' || this.stop?.aborted) return;
    if (!this.timers) throw new Error('a run waiting for a slot needs the run timer (the crew-run queue)');
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
      const left = await this.slots.releaseSlot(limit.key, correlationId);
      const now = this.clock.now();
      const held = liveEntries(left, leaseEnd, now).length;
      if (held >= limit.max || !this.timers) return;
      const line = await this.slots.slotQueue(limit.key, held + 1);
      const next = line.find((id) => !holds(left[id], now));
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
    const until = now + RUN_LEASE_MS;
    lease.held = true;
    if (!(await this.runs.takeLease(run.correlation_id, { owner: lease.owner, now, until }, eventCount))) {
      lease.held = false;
      throw new IndexTaken();
    }
    lease.until = until;
  }

  /** The message kept failing (dead-letter queue): the run ends with `run.failed`. */
  async failAbandoned(correlationId: string, reason: string): Promise<void> {
    // After MAX_RESUMES refused writes it gives up, without an error.
    await retry<void>(
      async () => {
        const run = await this.runs.get(correlationId);
        if (!run) return;
        const log = await this.runs.allLogEntries(correlationId);
        const { append } = abandon({ run, log, now: this.clock.now() }, reason);
        const [failed] = append;
        if (!failed) return;
        if (await this.runs.append(run, failed.entry, failed.fields, failed.change)) {
          // Its deliveries are given up: its slot, if one holds it, goes to the next in line.
          if (run.limit) await this.letSlotGo(run.limit, correlationId);
          return;
        }
        return AGAIN;
      },
      { attempts: MAX_RESUMES },
    );
  }

  /**
   * A slot of the run's concurrency limit for the step it goes on with: the one this delivery
   * holds (renewed with its lease once a third of it has passed), or one taken as any run takes one.
   */
  private async ensureSlot(run: RunItem, slot: SlotHold): Promise<SlotAnswer> {
    const limit = run.limit!;
    if (slot.taken) {
      if (slot.until - this.clock.now() >= (RUN_LEASE_MS * 2) / 3) return { taken: true };
      const until = this.clock.now() + RUN_LEASE_MS;
      if (await this.slots.renewSlot(limit.key, run.correlation_id, until)) {
        slot.until = until;
        return { taken: true };
      }
      // It lapsed and went to another run: one is taken again, as any run takes one.
      slot.taken = false;
    }
    return this.holdSlot(run, limit, slot);
  }

  /**
   * Does what `decide` (decide.ts) answers until the delivery ends: a short loop of
   * decide → (take a slot | execute a step | write and wait) → decide again.
   *
   * Entries are gathered and written together where nothing observable happens between
   * them: a step's closing entry with the next step's opening one, and render steps (no
   * I/O) entirely, so a run of render steps is one write from `run.started` to
   * `run.completed`. Before a step with I/O everything gathered is written, so its
   * `step.started` is there while it runs. Each status change in a write is its own
   * domain event, written with it (the run as that change left it).
   */
  private async advance(
    run: RunItem,
    read: RunLogEntry[],
    deadline: Deadline | undefined,
    lease: Lease,
    slot: SlotHold,
    slotWake: SlotWake | undefined,
  ): Promise<void> {
    const log = logger.createChild({ persistentKeys: { correlation_id: run.correlation_id } });
    /** The run as this delivery's last write left it (what the next write's entries describe). */
    let written: RunItem = { ...run, event_count: Math.max(read.length, run.event_count) };
    /** The log as read, and everything decided since (written or not). */
    const entries = [...read];
    let pending: RunLogEntry[] = [];
    let update: RunUpdate = {};
    /** The status changes gathered, each with the run's fields and event count as it left them. */
    let changes: EarlierChange[] = [];
    const gather = (appended: readonly Appended[]) => {
      for (const { entry, fields, change } of appended) {
        pending.push(entry);
        entries.push(entry);
        Object.assign(update, fields);
        if (change) changes.push({ change, update: { ...update }, eventCount: written.event_count + pending.length });
      }
    };
    // Each write takes or renews the lease; `release` lets it go with the delivery's last write.
    const flush = async (release = false) => {
      if (pending.length === 0) return;
      const now = this.clock.now();
      const until = release ? null : now + RUN_LEASE_MS;
      const held = lease.held;
      lease.held = true;
      const ok = await this.runs.append(
        written,
        pending,
        update,
        changes.at(-1)?.change,
        { owner: lease.owner, now, until },
        changes.slice(0, -1),
      );
      if (!ok) {
        lease.held = held;
        throw new IndexTaken();
      }
      if (until === null) lease.held = false;
      else lease.until = until;
      // Written as the run's executor while holding its slot: this delivery lets the slot go.
      if (slot.taken) slot.ours = true;
      written = {
        ...written,
        ...update,
        event_count: written.event_count + pending.length,
        event_sequence: (written.event_sequence ?? 0) + changes.length,
      };
      pending = [];
      update = {};
      changes = [];
    };

    let asked: { slot?: SlotState; executed?: Executed } = {};
    let refused: Extract<SlotAnswer, { taken: false }> | undefined;
    for (;;) {
      const decision: Decision = decide({
        run: { ...written, ...update, event_count: written.event_count + pending.length },
        log: entries,
        now: this.clock.now(),
        ...asked,
        ...(deadline ? { remainingMs: deadline.remainingMs() } : {}),
        stopping: this.stop?.aborted === true,
      });
      gather(decision.append);
      asked = {};
      const next = decision.next;
      switch (next.kind) {
        case 'done':
          return;
        case 'take-slot': {
          const got = await this.ensureSlot(run, slot);
          refused = got.taken ? undefined : got;
          asked = { slot: got.taken ? 'held' : { retryAt: got.retryAt } };
          break;
        }
        case 'count-line':
          asked = { slot: { retryAt: refused!.retryAt, position: await refused!.position() } };
          break;
        case 'wait-slot':
          await flush(true);
          await this.backForSlot(run.correlation_id, next.at, slotWake);
          return;
        case 'stop':
          slot.keep = true;
          await flush(true);
          throw new Stopped();
        case 'continue-later':
          slot.keep = true;
          await flush(true);
          throw new OutOfTime();
        case 'wait-decision':
          await flush(true);
          if (!this.timers) throw new Error('an approval step needs the run timer (the crew-run queue)');
          // The timer says which wait it ends: once the step is decided, or the run went on, it does nothing.
          await this.timers.after(
            run.correlation_id,
            Math.min(MAX_TIMER_SECONDS, Math.max(0, Math.ceil((next.dueAt - this.clock.now()) / 1000))),
            next.timer,
          );
          return;
        case 'finish':
          await flush(true);
          if (next.ending === 'completed') log.info('crew run completed', { events: written.event_count });
          else if (next.ending === 'timed-out')
            log.info('crew run timed out', { timeout_seconds: next.timeout_seconds });
          else if (next.ending === 'step-failed')
            log.info('crew step failed', { step_id: next.step_id, error: next.error });
          return;
        case 'execute': {
          const { step, ctx } = next;
          if (!next.io) {
            asked = { executed: { step_id: step.id, outcome: await this.steps.execute(step, ctx) } };
            break;
          }
          await flush();
          if (!lease.held) await this.hold(run, written.event_count, lease);
          const watched = await this.whileWatched(
            run.correlation_id,
            lease,
            (cancelled) => this.steps.execute(step, ctx, cancelled),
            slot,
            next.timesOutAt,
          );
          if (watched === STOPPED) {
            slot.keep = true;
            throw new Stopped();
          }
          // Cancelled meanwhile: `run.cancelled` is the run's last entry; re-read, nothing more is written.
          if (watched === CANCELLED) throw new IndexTaken();
          // Abandoned at the deadline: the step stays started, and the run ends timed out.
          asked = {
            executed:
              watched === TIMED_OUT ? { step_id: step.id, timedOut: true } : { step_id: step.id, outcome: watched },
          };
          break;
        }
      }
    }
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
          if (lease.until - this.clock.now() < (RUN_LEASE_MS * 2) / 3) {
            const until = this.clock.now() + RUN_LEASE_MS;
            const limit = slot.taken ? slot.limit : undefined;
            const [renewed, slotKept] = await Promise.all([
              this.runs.renewLease(correlationId, lease.owner, until),
              limit ? this.slots.renewSlot(limit.key, correlationId, until) : true,
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
}
