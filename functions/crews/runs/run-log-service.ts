import type { Caller } from '../../../shared/auth/caller.js';
import { type Clock, systemClock } from '../../../shared/clock.js';
import { fittingPage } from '../limits.js';
import type { RunLogEntry } from './run-schemas.js';
import { readableRun } from './run-access.js';
import { FINISHED_STATUSES, type RunStore } from './run-store.js';
import { InProcessRunSignals, LONG_POLL_INTERVAL_MS, type RunSignals } from './signals.js';
import { WaitingPolls } from './waiting-polls.js';

/** The most entries one E13 read asks the store for (its answer then fits in 1 MiB of JSON: limits.ts). */
const MAX_EVENTS_PER_POLL = 1000;

/** A run's log (E13): read from an index on, or long-polled until an entry comes. */
export class RunLogService {
  constructor(
    private readonly runs: Pick<RunStore, 'get' | 'logEntries'>,
    private readonly signals: RunSignals = new InProcessRunSignals(),
    /** One per process: the composition builds one service for the API. */
    private readonly polls = new WaitingPolls(),
    private readonly clock: Clock = systemClock,
  ) {}

  /**
   * E13: events with index ≥ start: one GetItem (ownership) and one Query from `start`; as
   * many as fit in 1 MiB of JSON (the client continues after the last index). With
   * `waitSeconds` and nothing to answer yet from a run still going, a long poll (fair
   * use): it takes one of the caller's places for waiting polls (TooManyRequests when
   * none is free) and queries again at once when this process writes an event at or after
   * `start` (signals, watched from before the first Query so that no write is missed), else
   * once every LONG_POLL_INTERVAL_MS, until one is there, the time is up (then `[]`) or
   * `abort` fires (the client went away); its place is given back however it ends.
   */
  async runLog(
    correlationId: string,
    start: number,
    caller: Caller,
    waitSeconds = 0,
    abort?: AbortSignal,
  ): Promise<RunLogEntry[]> {
    const watch = waitSeconds > 0 ? this.signals.watch(correlationId, start) : undefined;
    try {
      const [run, events] = await Promise.all([
        readableRun(this.runs, correlationId, caller),
        this.runs.logEntries(correlationId, start, MAX_EVENTS_PER_POLL),
      ]);
      if (!watch || events.length > 0 || FINISHED_STATUSES.has(run.status)) return fittingPage(events);
      const release = this.polls.take(caller.principal);
      try {
        const deadline = this.clock.now() + waitSeconds * 1000;
        let lastRead = this.clock.now();
        for (;;) {
          const left = deadline - this.clock.now();
          if (left <= 0 || abort?.aborted) return [];
          const untilRead = lastRead + LONG_POLL_INTERVAL_MS - this.clock.now();
          if (untilRead > 0) {
            await watch.next(Math.min(untilRead, left), abort);
            if (abort?.aborted) return [];
          }
          lastRead = this.clock.now();
          const more = await this.runs.logEntries(correlationId, start, MAX_EVENTS_PER_POLL);
          if (more.length > 0) return fittingPage(more);
        }
      } finally {
        release();
      }
    } finally {
      watch?.close();
    }
  }
}
