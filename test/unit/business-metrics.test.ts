import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { businessMetrics, createRuntime, lambdaRuntimeFromEnv } from '../../functions/composition.js';
import { EmfBusinessMetrics, NoBusinessMetrics } from '../../shared/adapters/emf-metrics.js';
import { loadConfig } from '../../shared/config.js';
import type { BusinessMetrics } from '../../shared/ports/metrics.js';

/** Business metrics: EMF lines on stdout on AWS (CloudWatch Logs makes them metrics), nothing locally. */

/** What was written to stdout while `run` ran, line by line. */
async function stdoutOf(run: () => Promise<void>): Promise<string[]> {
  const chunks: string[] = [];
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    return true;
  });
  try {
    await run();
  } finally {
    spy.mockRestore();
  }
  return chunks
    .join('')
    .split('\n')
    .filter((line) => line !== '');
}

interface Emf {
  _aws: { Timestamp: number; CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: unknown[] }[] };
  [key: string]: unknown;
}

/** An EMF line of the events dispatcher on prod, as read back (its `_aws` metadata under `cw`, no timestamp). */
const emfOf = (metric: string, dimension: string, value: string, count: number) => ({
  cw: [{ Namespace: 'dpm', Dimensions: [['service', 'stage', dimension]], Metrics: [{ Name: metric, Unit: 'Count' }] }],
  service: 'domain-events-dispatcher',
  stage: 'prod',
  [dimension]: value,
  [metric]: count,
});

describe('the EMF business metrics (Powertools Metrics)', () => {
  // Powertools writes nothing in its dev mode; these tests read what it writes on AWS.
  beforeEach(() => vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false'));
  afterEach(() => vi.unstubAllEnvs());

  it('writes one EMF line per metric and dimension values, namespace dpm, counts summed', async () => {
    const metrics = new EmfBusinessMetrics('domain-events-dispatcher', 'prod');
    const lines = await stdoutOf(async () => {
      metrics.count('DomainEvents', { type: 'dpm.crew.run.succeeded' });
      metrics.count('DomainEvents', { type: 'dpm.crew.run.failed' });
      metrics.count('DomainEvents', { type: 'dpm.crew.run.succeeded' });
      metrics.count('WebhookDeliveries', { outcome: 'delivered' }, 3);
      await metrics.flush();
    });
    expect(lines).toHaveLength(3);
    const emf = lines.map((line) => JSON.parse(line) as Emf);
    for (const e of emf) expect(typeof e._aws.Timestamp).toBe('number');
    expect(emf.map(({ _aws, ...rest }) => ({ cw: _aws.CloudWatchMetrics, ...rest }))).toEqual([
      emfOf('DomainEvents', 'type', 'dpm.crew.run.succeeded', 2),
      emfOf('DomainEvents', 'type', 'dpm.crew.run.failed', 1),
      emfOf('WebhookDeliveries', 'outcome', 'delivered', 3),
    ]);
  });

  it('starts again from nothing after a flush, and a flush with nothing counted writes nothing', async () => {
    const metrics = new EmfBusinessMetrics('webhooks-worker', 'dev');
    const first = await stdoutOf(async () => {
      metrics.count('WebhookDeliveries', { outcome: 'failed_attempt' });
      await metrics.flush();
    });
    expect(first.map((line) => (JSON.parse(line) as Emf).WebhookDeliveries)).toEqual([1]);
    const second = await stdoutOf(async () => {
      await metrics.flush();
      metrics.count('WebhookDeliveries', { outcome: 'gave_up' });
      await metrics.flush();
    });
    expect(second.map((line) => JSON.parse(line) as Emf)).toEqual([
      expect.objectContaining({ outcome: 'gave_up', WebhookDeliveries: 1, service: 'webhooks-worker', stage: 'dev' }),
    ]);
  });

  it('keeps dimension values that look like object keys as data', async () => {
    const metrics = new EmfBusinessMetrics('domain-events-dispatcher', 'prod');
    const lines = await stdoutOf(async () => {
      metrics.count('DomainEvents', { type: '__proto__' });
      metrics.count('DomainEvents', { type: 'constructor' });
      await metrics.flush();
    });
    expect(lines.map((line) => (JSON.parse(line) as Emf).type)).toEqual(['__proto__', 'constructor']);
  });
});

describe('the local business metrics', () => {
  it('write nothing', async () => {
    const log = vi.spyOn(console, 'log');
    const metrics: BusinessMetrics = new NoBusinessMetrics();
    const lines = await stdoutOf(async () => {
      metrics.count('DomainEvents', { type: 'dpm.crew.run.succeeded' });
      metrics.count('WebhookDeliveries', { outcome: 'delivered' }, 5);
      await metrics.flush();
    });
    expect(lines).toEqual([]);
    expect(log).not.toHaveBeenCalled();
    log.mockRestore();
  });
});

describe('the choice of business metrics', () => {
  it('is EMF for the Lambda’s runtime only, nothing for any other (the local platform’s)', () => {
    const noDb = {} as DynamoDBDocumentClient;
    expect(businessMetrics(createRuntime(loadConfig({}), noDb), 'domain-events-dispatcher')).toBeInstanceOf(
      NoBusinessMetrics,
    );
    expect(businessMetrics(lambdaRuntimeFromEnv(), 'webhooks-worker')).toBeInstanceOf(EmfBusinessMetrics);
  });
});
