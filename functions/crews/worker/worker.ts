import type { Context, SQSRecord } from 'aws-lambda';
import { type SqsHandler, sqsBatchHandler } from '../../../shared/aws/lambda.js';
import { logger } from '../../../shared/logger.js';
import type { CrewRunner, RunWake, StepTimer } from './runner.js';
import type { ScheduleService } from '../schedules/schedule-service.js';
import type { RunQueue } from '../runs/run-service.js';
import type { RunItem } from '../runs/run-store.js';
import type { ScheduleFire } from '../../../shared/ports/scheduler.js';

/**
 * What a crew-run message carries: `{"correlation_id"}`; a new run's first message also
 * `run`, the run as E2 stored it (the worker starts it without reading it back); with `timer` the approval
 * expiry it is for, with `slot` (`wait` or `freed`) a slot of the run's concurrency limit
 * (run-queue.ts; messages queued before timers or slots said so are plain). A malformed
 * body throws (and ends in the DLQ).
 */
export function runMessageOf(record: SQSRecord): { correlationId: string; timer?: RunWake; run?: RunItem } {
  const body = JSON.parse(record.body) as { correlation_id?: unknown; timer?: unknown; slot?: unknown; run?: unknown };
  if (typeof body.correlation_id !== 'string' || body.correlation_id.length !== 36) {
    throw new Error(`message ${record.messageId} carries no correlation_id`);
  }
  if (body.run !== undefined) {
    const run = carriedRun(body.run, body.correlation_id);
    return run ? { correlationId: body.correlation_id, run } : { correlationId: body.correlation_id };
  }
  if (body.slot !== undefined) {
    if (body.slot !== 'wait' && body.slot !== 'freed')
      throw new Error(`message ${record.messageId} carries a malformed slot`);
    return { correlationId: body.correlation_id, timer: { slot: body.slot } };
  }
  if (body.timer === undefined) return { correlationId: body.correlation_id };
  const timer = body.timer as Partial<Record<keyof StepTimer, unknown>> | null;
  if (typeof timer?.step_id !== 'string' || typeof timer.expires_at !== 'string') {
    throw new Error(`message ${record.messageId} carries a malformed timer`);
  }
  return { correlationId: body.correlation_id, timer: { step_id: timer.step_id, expires_at: timer.expires_at } };
}

/**
 * The run a new run's message carries (run-queue.ts `send`), when it is one: a pending run of
 * this id with its steps and event counts. Anything else is ignored (the worker reads the run).
 */
function carriedRun(value: unknown, correlationId: string): RunItem | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const run = value as Partial<RunItem>;
  const ok =
    run.correlation_id === correlationId &&
    run.status === 'pending' &&
    typeof run.event_count === 'number' &&
    typeof run.event_sequence === 'number' &&
    typeof run.expires_at === 'number' &&
    Array.isArray(run.steps);
  return ok ? (run as RunItem) : undefined;
}

/**
 * A schedule's fire (`{"schedule_id", "scheduled_time"}`: EventBridge Scheduler's target
 * input on AWS, the local scheduler's message otherwise), or undefined for a run's message.
 */
export function scheduleFireOf(record: SQSRecord): ScheduleFire | undefined {
  const body = JSON.parse(record.body) as Partial<Record<keyof ScheduleFire, unknown>>;
  if (body.schedule_id === undefined) return undefined;
  if (
    typeof body.schedule_id !== 'string' ||
    typeof body.scheduled_time !== 'string' ||
    Number.isNaN(Date.parse(body.scheduled_time))
  )
    throw new Error(`message ${record.messageId} carries a malformed schedule fire`);
  // Scheduler's `<aws.scheduler.scheduled-time>` has no milliseconds: one spelling per instant.
  return { schedule_id: body.schedule_id, scheduled_time: new Date(body.scheduled_time).toISOString() };
}

/** The run a crew-run message carries; a malformed body throws. */
export const correlationIdOf = (record: SQSRecord): string => runMessageOf(record).correlationId;

/**
 * Partial batch responses: only the records that failed are delivered again. A run that
 * needs more time than this invocation has left is queued again and acknowledged.
 */
export function createWorkerHandler(
  runner: CrewRunner,
  queue?: RunQueue,
  schedules?: Pick<ScheduleService, 'fire'>,
): SqsHandler {
  return sqsBatchHandler(async (record: SQSRecord, context?: Context) => {
    const fire = scheduleFireOf(record);
    if (fire) {
      if (!schedules) throw new Error('a schedule fire needs the schedules (crews/compose.ts scheduleService)');
      return schedules.fire(fire.schedule_id, fire.scheduled_time);
    }
    const { correlationId, timer, run } = runMessageOf(record);
    try {
      const deadline = context && queue ? { remainingMs: () => context.getRemainingTimeInMillis() } : undefined;
      if ((await runner.process(correlationId, deadline, timer, run)) === 'continue-later') {
        logger.info('crew run continues in a new delivery', { correlation_id: correlationId });
        await queue!.send(correlationId);
      }
    } catch (err) {
      logger.error('crew run delivery failed; it will be retried', {
        correlation_id: correlationId,
        receive_count: record.attributes.ApproximateReceiveCount,
        error: err as Error,
      });
      throw err;
    }
  });
}
