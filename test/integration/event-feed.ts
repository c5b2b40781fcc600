import { expect } from 'vitest';
import { eventually, NotWithin, notYet } from '../support/eventually.js';
import { api } from './helpers.js';

/** A domain event as the feed answers it (API.md §13). */
export type Envelope = {
  specversion: string;
  id: string;
  source: string;
  type: string;
  subject: string;
  time: string;
  datacontenttype: string;
  actor: string | null;
  sequence: number;
  data: Record<string, any>;
};

/** How a test reaches the feed: the suite's platform (`api`), or a platform of its own. */
export type FeedCall = (
  path: string,
  options: { token: string },
) => Promise<{ status: number; body: any; text?: string }>;

/**
 * The subject's events once `count` are there (they arrive through the tables' streams,
 * within milliseconds locally), or what there is at the deadline: a test that checks that
 * no more came asks for more than it expects.
 */
export async function eventsOf(
  subject: string,
  count: number,
  token: string,
  options: { call?: FeedCall; deadlineMs?: number } = {},
): Promise<Envelope[]> {
  const call = options.call ?? api;
  const read = async () => {
    const res = await call(`/api/domain-events?subject=${encodeURIComponent(subject)}&limit=1000`, { token });
    expect(res.status).toBe(200);
    return res.body as Envelope[];
  };
  return eventually(
    async () => {
      const events = await read();
      return events.length >= count ? events : notYet(events);
    },
    options.deadlineMs ?? 15_000,
    `${count} events about ${subject}`,
    50,
  ).catch((err: unknown) => {
    if (err instanceof NotWithin) return err.last as Envelope[];
    throw err;
  });
}

/** Long enough for a stamped change to have reached the feed: what a refused one is checked against. */
export const settle = () => new Promise((r) => setTimeout(r, 1_000));
