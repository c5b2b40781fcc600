import type { EventBridgeClient, PutEventsRequestEntry } from '@aws-sdk/client-eventbridge';
import { requestTimeouts } from '../aws/client-options.js';
import { lazy, type Lazy } from '../aws/lazy.js';
import type { DomainEvent } from '../events/types.js';
import { logger } from '../logger.js';
import type { EventBus } from '../ports/event-bus.js';
import { AGAIN, backoffMs, retry } from '../retry.js';

type Sdk = typeof import('@aws-sdk/client-eventbridge');

/** PutEvents takes at most 10 entries a call. */
const BATCH = 10;
/** Entries that failed (throttling, an internal error) are put again this many times. */
const ATTEMPTS = 4;

/**
 * The stage's EventBridge bus (docs/events-and-webhooks.md): `Source` `dpm.<stage>`, `DetailType` the
 * event type, `Detail` the envelope. A consumer in another account subscribes with a rule.
 */
export class EventBridgeBus implements EventBus {
  private readonly client: Lazy<{ sdk: Sdk; client: EventBridgeClient }>;

  constructor(
    private readonly busName: string,
    private readonly stage: string,
    region: string,
    private readonly pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms)),
  ) {
    this.client = lazy(async () => {
      const sdk = await import('@aws-sdk/client-eventbridge');
      return { sdk, client: new sdk.EventBridgeClient({ region, requestHandler: requestTimeouts() }) };
    });
  }

  async publish(events: readonly DomainEvent[]): Promise<{ failed: readonly DomainEvent[] }> {
    const failed: DomainEvent[] = [];
    for (let i = 0; i < events.length; i += BATCH) failed.push(...(await this.putBatch(events.slice(i, i + BATCH))));
    return { failed };
  }

  private async putBatch(batch: readonly DomainEvent[]): Promise<DomainEvent[]> {
    const { sdk, client } = await this.client();
    let pending = [...batch];
    if (pending.length === 0) return pending;
    const put = await retry(
      async (attempt) => {
        const out = await client.send(new sdk.PutEventsCommand({ Entries: pending.map((e) => this.entry(e)) }));
        if (!out.FailedEntryCount) return [];
        // Entries answer in the request's order; a failed one has an ErrorCode.
        const again = pending.filter((_, i) => out.Entries?.[i]?.ErrorCode);
        for (const [i, entry] of (out.Entries ?? []).entries())
          if (entry.ErrorCode)
            logger.warn('event not put on the bus', { event_id: pending[i]?.id, code: entry.ErrorCode, attempt });
        pending = again;
        return pending.length > 0 ? AGAIN : pending;
      },
      // 400, 800, 1600 ms before the 2nd … 4th put.
      { attempts: ATTEMPTS, delayMs: (attempt) => backoffMs(attempt, { baseMs: 100 }), sleep: this.pause },
    );
    return put.done ? put.value : pending;
  }

  private entry(event: DomainEvent): PutEventsRequestEntry {
    return {
      EventBusName: this.busName,
      Source: `dpm.${this.stage}`,
      DetailType: event.type,
      Detail: JSON.stringify(event),
      Time: new Date(event.time),
      Resources: [],
    };
  }
}

/** The local platform's bus: nothing leaves the machine; the feed and webhooks are the outputs. */
export class LocalEventBus implements EventBus {
  async publish(): Promise<{ failed: readonly DomainEvent[] }> {
    return { failed: [] };
  }
}
