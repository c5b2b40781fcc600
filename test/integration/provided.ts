import { inject, type ProvidedContext } from 'vitest';
import type { PlatformSlot } from './global-setup.js';

/** What a test file may ask for: the run's shared values and its own platform's. */
export type Provided = Omit<ProvidedContext, 'platforms'> & PlatformSlot;

/**
 * This file's platform: the one of its worker slot. Files run side by side in several
 * workers (vitest.config.ts); each worker slot (`VITEST_POOL_ID`, 1 to the worker count)
 * has a platform of its own on its own stage, and the files a worker runs one after the
 * other share it, as every file shared the one platform before.
 */
export function platform(): PlatformSlot {
  const slots = inject('platforms');
  const id = Number(process.env.VITEST_POOL_ID ?? '1');
  const slot = slots[(Number.isInteger(id) && id > 0 ? id - 1 : 0) % slots.length];
  if (!slot) throw new Error('no test platform was started (is test/integration/global-setup.ts the globalSetup?)');
  return slot;
}

/** A value the integration setup provides: this file's platform's own (its URL, stage, …) or the run's. */
export function provided<K extends keyof Provided>(key: K): Provided[K] {
  const own = platform();
  if (key in own) return own[key as keyof PlatformSlot] as Provided[K];
  return inject(key as keyof ProvidedContext) as Provided[K];
}
