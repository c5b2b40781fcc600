import { createHash } from 'node:crypto';
import type { CrewTemplate, TemplateRequest } from '../templates/template-schemas.js';
import type { RunItem } from './run-store.js';
import { render } from '../templates/templating.js';

/*
 * A template's run limits (docs/crews.md): `max_concurrent_runs`
 * with its `concurrency_key`, and `run_timeout_seconds`. What a template declares, and what
 * E2 copies onto each run (as it copies the steps); the runner (runner.ts) applies them.
 */

/** The limit fields of a template. */
export type TemplateLimits = Partial<
  Pick<CrewTemplate, 'max_concurrent_runs' | 'concurrency_key' | 'run_timeout_seconds'>
>;

/** The limits a request declares (a field left out or null is no limit). */
export function templateLimits(req: TemplateRequest): TemplateLimits {
  return {
    ...(req.max_concurrent_runs != null ? { max_concurrent_runs: req.max_concurrent_runs } : {}),
    ...(req.concurrency_key != null ? { concurrency_key: req.concurrency_key } : {}),
    ...(req.run_timeout_seconds != null ? { run_timeout_seconds: req.run_timeout_seconds } : {}),
  };
}

/** `template` without its limits (a replacement declares them anew). */
export function withoutLimits<T extends TemplateLimits>(template: T): Omit<T, keyof TemplateLimits> {
  const { max_concurrent_runs: _max, concurrency_key: _key, run_timeout_seconds: _timeout, ...rest } = template;
  return rest;
}

/**
 * The slot key of runs of `templateId` whose concurrency key rendered to `rendered` (null
 * without one): a SHA-256 of both, so that the key is of fixed length whatever the values,
 * and what a caller put in them is never part of a stored key's structure.
 */
export function limitKeyOf(templateId: string, rendered: string | null): string {
  return createHash('sha256')
    .update(JSON.stringify([templateId, rendered]))
    .digest('hex');
}

/**
 * What a new run of `template` with `values` carries of its limits: the slot key (its
 * `concurrency_key` rendered from the values) and `max_concurrent_runs`, and
 * `run_timeout_seconds`. A run keeps them as they were when it was queued.
 */
export function runLimitsOf(
  template: Pick<CrewTemplate, 'id'> & TemplateLimits,
  values: Readonly<Record<string, unknown>>,
): Pick<RunItem, 'limit' | 'run_timeout_seconds'> {
  const max = template.max_concurrent_runs;
  const rendered = template.concurrency_key != null ? render(template.concurrency_key, { values, outputs: {} }) : null;
  return {
    ...(max != null ? { limit: { key: limitKeyOf(template.id, rendered), max } } : {}),
    ...(template.run_timeout_seconds != null ? { run_timeout_seconds: template.run_timeout_seconds } : {}),
  };
}
