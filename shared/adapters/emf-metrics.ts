import type { Metrics } from '@aws-lambda-powertools/metrics';
import { lazy, type Lazy } from '../aws/lazy.js';
import { logger } from '../logger.js';
import type { BusinessMetrics, MetricDimensions, MetricName } from '../ports/metrics.js';

/** The CloudWatch namespace of every business metric. */
export const METRICS_NAMESPACE = 'dpm';

/** One metric's count for one set of dimension values. */
interface Tally {
  readonly metric: MetricName;
  readonly dimensions: readonly (readonly [string, string])[];
  value: number;
}

/**
 * Business metrics as CloudWatch Embedded Metric Format lines on stdout (Powertools
 * Metrics), which CloudWatch Logs turns into metrics in a Lambda: namespace `dpm`,
 * dimensions `service`, `stage` and the metric's own. Counts add up in memory until
 * `flush`, which writes one line for each metric and set of dimension values (Powertools
 * keeps one value list a metric name, so two values of one dimension must not share a
 * line). Powertools loads on the first flush that has something to write.
 */
export class EmfBusinessMetrics implements BusinessMetrics {
  private readonly metrics: Lazy<{ metrics: Metrics; unit: 'Count' }>;
  /** By metric and dimension values, as JSON: they are data, never an object's keys. */
  private tallies = new Map<string, Tally>();

  constructor(service: string, stage: string) {
    this.metrics = lazy(async () => {
      const { Metrics, MetricUnit } = await import('@aws-lambda-powertools/metrics');
      const metrics = new Metrics({
        namespace: METRICS_NAMESPACE,
        serviceName: service,
        defaultDimensions: { stage },
        logger,
      });
      return { metrics, unit: MetricUnit.Count };
    });
  }

  count<M extends MetricName>(metric: M, dimensions: MetricDimensions[M], value = 1): void {
    const entries: [string, string][] = Object.entries(dimensions as Readonly<Record<string, string>>);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const key = JSON.stringify([metric, entries]);
    const tally = this.tallies.get(key);
    if (tally) tally.value += value;
    else this.tallies.set(key, { metric, dimensions: entries, value });
  }

  async flush(): Promise<void> {
    // Taken at once: what another invocation counts meanwhile waits for its own flush.
    const tallies = this.tallies;
    this.tallies = new Map();
    if (tallies.size === 0) return;
    try {
      const { metrics, unit } = await this.metrics();
      for (const { metric, dimensions, value } of tallies.values()) {
        for (const [name, dimensionValue] of dimensions) metrics.addDimension(name, dimensionValue);
        metrics.addMetric(metric, unit, value);
        metrics.publishStoredMetrics();
      }
    } catch (err) {
      logger.warn('business metrics not written', { error: err as Error });
    }
  }
}

/** The local platform's metrics: nothing is counted or written (`npm start` prints no EMF). */
export class NoBusinessMetrics implements BusinessMetrics {
  count(): void {}

  async flush(): Promise<void> {}
}
