import { setTimeout as sleepFor } from 'node:timers/promises';

/**
 * The one home of trying again: one backoff formula (`backoffMs`) and one loop (`retry`).
 * A caller keeps what is its own: what one try does, how many tries, and what it answers
 * (or throws) when they ran out.
 */

/** What a try answers to be tried again (anything else ends the tries). */
export const AGAIN: unique symbol = Symbol('again');
export type Again = typeof AGAIN;

export interface Backoff {
  /** The pause at exponent 0. */
  readonly baseMs: number;
  /** No pause longer than this (before jitter). */
  readonly maxMs?: number;
  /** `full`: a random pause between 0 and the one computed. */
  readonly jitter?: 'full';
}

/** min(maxMs, baseMs · 2^exponent); with full jitter that times Math.random(). */
export function backoffMs(exponent: number, { baseMs, maxMs = Infinity, jitter }: Backoff): number {
  const ms = Math.min(maxMs, baseMs * 2 ** exponent);
  return jitter === 'full' ? Math.random() * ms : ms;
}

export interface RetryOptions {
  /** Tries at most this many times. */
  readonly attempts: number;
  /** The pause before try `attempt` (2 … attempts); none when not given. */
  readonly delayMs?: (attempt: number) => number;
  /** How a pause is waited (tests hand in a fake); a timer when not given. */
  readonly sleep?: (ms: number) => Promise<unknown>;
}

/** A try's answer (`done`), or `done: false` when every try answered AGAIN. */
export type Retried<T> = { readonly done: true; readonly value: T } | { readonly done: false };

/**
 * Calls `tryOnce(attempt)` (attempt 1, 2, …) until it answers something other than AGAIN,
 * at most `attempts` times, pausing `delayMs(attempt)` before each try after the first.
 * What a try throws is thrown at once: a try decides itself what is worth another.
 */
export async function retry<T>(
  tryOnce: (attempt: number) => T | Again | Promise<T | Again>,
  { attempts, delayMs, sleep = sleepFor }: RetryOptions,
): Promise<Retried<T>> {
  for (let attempt = 1; attempt <= attempts; attempt++) {
    if (attempt > 1 && delayMs) await sleep(delayMs(attempt));
    const value = await tryOnce(attempt);
    if (value !== AGAIN) return { done: true, value: value as T };
  }
  return { done: false };
}
