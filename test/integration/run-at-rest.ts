import { expect } from 'vitest';
import { eventually, notYet } from '../support/eventually.js';
import { storedItem } from './event-feed.js';
import { provided } from './provided.js';

type Queued = { ready: unknown[]; delayed: unknown[]; inflight: unknown[] };

/**
 * The crew-run queue's messages about a run, as the queue holds them now: waiting, delayed
 * (a timer) or taken by a worker and not yet deleted (the local queue poller deletes a
 * message once its handler returned). Read through the emulator's (fauxqs) inspection, which
 * takes or hides no message.
 */
async function queuedAbout(correlationId: string): Promise<unknown[]> {
  const name = provided('crewRunQueueUrl').split('/').at(-1)!;
  const res = await fetch(`${provided('sqsEndpoint')}/_fauxqs/queues/${encodeURIComponent(name)}`);
  expect(res.status, `the crew-run queue ${name}`).toBe(200);
  const { messages } = (await res.json()) as { messages: Queued };
  return [...messages.ready, ...messages.delayed, ...messages.inflight].filter((m) =>
    JSON.stringify(m).includes(correlationId),
  );
}

/**
 * Waits until nothing can write to a run any more by itself: no message about it is in the
 * crew-run queue (so no worker handles it, nor will one), and no delivery holds its lease (a
 * worker lets it go before its handler returns). What a check that a run wrote nothing more
 * (after `run.cancelled`, after its last attempt) waits for, instead of a while: the run log
 * and the run's events read afterwards are all there will be, until someone changes the run.
 */
export async function runAtRest(correlationId: string): Promise<void> {
  await eventually(
    async () => {
      const queued = await queuedAbout(correlationId);
      const lease = (await storedItem('crewRuns', { correlation_id: correlationId }))?.lease_owner;
      return queued.length === 0 && lease === undefined ? true : notYet({ queued, lease });
    },
    30_000,
    `run ${correlationId} at rest (no message about it queued, no lease held)`,
    50,
  );
}
