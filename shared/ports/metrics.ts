/**
 * What became of one webhook delivery message (docs/events-and-webhooks.md): `delivered` (a 2xx),
 * `failed_attempt` (no 2xx; a retry is queued), `gave_up` (no 2xx and the schedule is
 * spent), `gone` (410 Gone: the endpoint is disabled), `not_sent` (failed without an
 * attempt: its endpoint is disabled or deleted).
 */
export type WebhookDeliveryOutcome = 'delivered' | 'failed_attempt' | 'gave_up' | 'gone' | 'not_sent';

/** Every business metric, with the dimensions it is counted by (their values come from closed sets). */
export interface MetricDimensions {
  /**
   * A domain event newly recorded (docs/events-and-webhooks.md), by its type: `dpm.crew.run.started`,
   * `dpm.crew.run.succeeded`, `dpm.decision.version.approved`, ...
   */
  readonly DomainEvents: { readonly type: string };
  /** A webhook delivery attempt recorded, or a delivery failed without one, by its outcome. */
  readonly WebhookDeliveries: { readonly outcome: WebhookDeliveryOutcome };
}

export type MetricName = keyof MetricDimensions;

/**
 * Business metrics for production operations: counts of what the service did. On AWS,
 * CloudWatch metrics in the `dpm` namespace; on the local platform, nothing.
 */
export interface BusinessMetrics {
  /** Adds `value` (1 unless given) to the metric for these dimension values; held until `flush`. */
  count<M extends MetricName>(metric: M, dimensions: MetricDimensions[M], value?: number): void;
  /** Sends what was counted since the last flush: once at the end of each invocation. Never rejects. */
  flush(): Promise<void>;
}
