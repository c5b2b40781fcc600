import {
  ConflictException,
  CreateScheduleCommand,
  DeleteScheduleCommand,
  InternalServerException,
  ResourceNotFoundException,
  SchedulerClient,
  ThrottlingException,
  UpdateScheduleCommand,
  ValidationException,
} from '@aws-sdk/client-scheduler';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

vi.hoisted(() => {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
});

import type { ScheduleItem, ScheduleStore } from '../../functions/crews/schedules/schedule-store.js';
import { ScheduleService } from '../../functions/crews/schedules/schedule-service.js';
import type { TemplateStore } from '../../functions/crews/templates/template-store.js';
import { EventBridgeScheduler } from '../../shared/adapters/eventbridge-scheduler.js';
import type { Caller } from '../../shared/auth/caller.js';
import { ManualClock } from '../../shared/clock.js';
import { statusOf } from '../../shared/http/errors.js';
import type { ScheduleTrigger } from '../../shared/ports/scheduler.js';

/** The AWS side of crew schedules (docs/crews.md, schedules), against a mocked Scheduler. */

const SETTINGS = {
  groupName: 'dpm-prod',
  roleArn: 'arn:aws:iam::123456789012:role/Dpm-prod-Stateful-SchedulerRole',
  queueArn: 'arn:aws:sqs:eu-west-1:123456789012:dpm-prod-crew-runs',
  region: 'eu-west-1',
};

const TRIGGER: ScheduleTrigger = {
  id: '0b6f5c1e-3f7a-4c57-9a8e-2d1f0c9b7e41',
  expression: 'cron(30 2 ? * MON-FRI *)',
  timezone: 'Europe/Berlin',
  enabled: true,
};

/** What CreateSchedule and UpdateSchedule both receive for TRIGGER. */
const SCHEDULE = {
  Name: TRIGGER.id,
  GroupName: 'dpm-prod',
  ScheduleExpression: 'cron(30 2 ? * MON-FRI *)',
  ScheduleExpressionTimezone: 'Europe/Berlin',
  State: 'ENABLED',
  FlexibleTimeWindow: { Mode: 'OFF' },
  Target: {
    Arn: SETTINGS.queueArn,
    RoleArn: SETTINGS.roleArn,
    Input: `{"schedule_id":"${TRIGGER.id}","scheduled_time":"<aws.scheduler.scheduled-time>"}`,
    RetryPolicy: { MaximumEventAgeInSeconds: 3600, MaximumRetryAttempts: 185 },
  },
};

/** Scheduler's exceptions as the SDK throws them (their shape has `Message` besides `message`). */
const sdkError = <T>(
  Ctor: new (opts: { Message: string; message: string; $metadata: object }) => T,
  message: string,
): T => new Ctor({ Message: message, message, $metadata: { httpStatusCode: 400, requestId: 'AWS-REQ-1' } });

const scheduler = mockClient(SchedulerClient);

beforeEach(() => scheduler.reset());
afterEach(() => scheduler.reset());

/** The commands sent, in order, as [name, input]. */
const sent = () => scheduler.calls().map((call) => [call.args[0].constructor.name, call.args[0].input]);

describe('EventBridgeScheduler.put', () => {
  it('creates the schedule in the stage group, sending a ScheduleFire to the crew-run queue', async () => {
    scheduler
      .on(CreateScheduleCommand)
      .resolves({ ScheduleArn: 'arn:aws:scheduler:eu-west-1:123456789012:schedule/dpm-prod/x' });
    await new EventBridgeScheduler(SETTINGS).put(TRIGGER);
    expect(sent()).toEqual([['CreateScheduleCommand', SCHEDULE]]);
    // The message the crews worker reads: Scheduler puts the fire's time in place of the keyword.
    expect(JSON.parse(SCHEDULE.Target.Input)).toEqual({
      schedule_id: TRIGGER.id,
      scheduled_time: '<aws.scheduler.scheduled-time>',
    });
  });

  it('replaces a schedule that exists (ConflictException) with the whole new one, disabled included', async () => {
    scheduler.on(CreateScheduleCommand).rejects(sdkError(ConflictException, 'Schedule already exists.'));
    scheduler.on(UpdateScheduleCommand).resolves({ ScheduleArn: 'arn' });
    const changed: ScheduleTrigger = { ...TRIGGER, expression: 'rate(1 hour)', timezone: 'UTC', enabled: false };
    await new EventBridgeScheduler(SETTINGS).put(changed);
    const expected = {
      ...SCHEDULE,
      ScheduleExpression: 'rate(1 hour)',
      ScheduleExpressionTimezone: 'UTC',
      State: 'DISABLED',
    };
    expect(sent()).toEqual([
      ['CreateScheduleCommand', expected],
      ['UpdateScheduleCommand', expected],
    ]);
  });

  it('starts a rate at its first fire (StartDate), one period after its expression was set, not at once', async () => {
    scheduler.on(CreateScheduleCommand).resolves({ ScheduleArn: 'arn' });
    const rate: ScheduleTrigger = {
      ...TRIGGER,
      expression: 'rate(1 hour)',
      timezone: 'UTC',
      anchor: '2026-03-07T10:00:30.000Z',
      start: '2026-03-07T11:00:30.000Z',
    };
    await new EventBridgeScheduler(SETTINGS).put(rate);
    expect(sent()).toEqual([
      [
        'CreateScheduleCommand',
        {
          ...SCHEDULE,
          ScheduleExpression: 'rate(1 hour)',
          ScheduleExpressionTimezone: 'UTC',
          StartDate: new Date('2026-03-07T11:00:30.000Z'),
        },
      ],
    ]);
  });

  it.each([
    ['ThrottlingException', () => sdkError(ThrottlingException, 'Rate exceeded'), 503],
    [
      'InternalServerException',
      () => Object.assign(sdkError(InternalServerException, 'boom'), { $fault: 'server' }),
      503,
    ],
    [
      'ResourceNotFoundException (no schedule group)',
      () => sdkError(ResourceNotFoundException, 'Schedule group dpm-prod does not exist.'),
      503,
    ],
    ['ValidationException', () => sdkError(ValidationException, 'Invalid Schedule Expression'), 500],
  ])('lets %s through, answered %i', async (_, error, status) => {
    scheduler.on(CreateScheduleCommand).rejects(error());
    const err = await new EventBridgeScheduler(SETTINGS).put(TRIGGER).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Error);
    expect(statusOf(err)).toBe(status);
    expect(scheduler.commandCalls(UpdateScheduleCommand)).toHaveLength(0);
  });

  it('lets a failed update through (a throttled replacement is a 503, not a silent success)', async () => {
    scheduler.on(CreateScheduleCommand).rejects(sdkError(ConflictException, 'Schedule already exists.'));
    scheduler.on(UpdateScheduleCommand).rejects(sdkError(ThrottlingException, 'Rate exceeded'));
    const err = await new EventBridgeScheduler(SETTINGS).put(TRIGGER).catch((e: unknown) => e);
    expect((err as Error).name).toBe('ThrottlingException');
    expect(statusOf(err)).toBe(503);
  });
});

describe('EventBridgeScheduler.remove', () => {
  it('deletes the schedule of that id in the stage group', async () => {
    scheduler.on(DeleteScheduleCommand).resolves({});
    await new EventBridgeScheduler(SETTINGS).remove(TRIGGER.id);
    expect(sent()).toEqual([['DeleteScheduleCommand', { Name: TRIGGER.id, GroupName: 'dpm-prod' }]]);
  });

  it('takes a schedule that does not exist as removed', async () => {
    scheduler.on(DeleteScheduleCommand).rejects(sdkError(ResourceNotFoundException, 'Schedule x does not exist.'));
    await expect(new EventBridgeScheduler(SETTINGS).remove(TRIGGER.id)).resolves.toBeUndefined();
  });

  it('lets throttling through (503)', async () => {
    scheduler.on(DeleteScheduleCommand).rejects(sdkError(ThrottlingException, 'Rate exceeded'));
    const err = await new EventBridgeScheduler(SETTINGS).remove(TRIGGER.id).catch((e: unknown) => e);
    expect((err as Error).name).toBe('ThrottlingException');
    expect(statusOf(err)).toBe(503);
  });
});

describe('a crew schedule on AWS: ScheduleService through EventBridgeScheduler', () => {
  it("sets a rate's StartDate one period after its expression was set: at creation, and kept by other changes", async () => {
    // The service's clock: each change's `at` and the next fires count from it.
    const clock = new ManualClock('2026-03-07T10:00:30.250Z');
    const stored = new Map<string, ScheduleItem>();
    const store = {
      create: async (schedule: ScheduleItem) => void stored.set(schedule.id, schedule),
      get: async (id: string) => stored.get(id),
      update: async (seen: ScheduleItem, update: Partial<ScheduleItem>) => {
        stored.set(seen.id, { ...stored.get(seen.id)!, ...update });
        return true;
      },
    } as unknown as ScheduleStore;
    const templates = {
      get: async (id: string) => ({ id, name: 'hourly', variables: [], steps: [] }),
    } as unknown as TemplateStore;
    const service = new ScheduleService(
      store,
      templates,
      { get: async () => undefined },
      { startScheduledRun: async () => undefined },
      new EventBridgeScheduler(SETTINGS),
      clock,
    );
    const admin: Caller = { principal: 'p-admin', name: 'admin', roles: new Set(['admin']), via: 'bearer' };
    scheduler.on(CreateScheduleCommand).rejects(sdkError(ConflictException, 'Schedule already exists.'));
    scheduler.on(UpdateScheduleCommand).resolves({ ScheduleArn: 'arn' });
    const startDates = () =>
      scheduler.commandCalls(UpdateScheduleCommand).map((call) => call.args[0].input.StartDate?.toISOString());

    const made = await service.create(
      {
        template_id: 't1',
        name: 'hourly',
        expression: 'rate(1 hour)',
        timezone: 'UTC',
        values: {},
        overlap: 'skip',
        enabled: true,
      },
      admin,
    );
    expect(made.next_run_at).toBe('2026-03-07T11:00:30.000Z');
    expect(startDates()).toEqual(['2026-03-07T11:00:30.000Z']);
    // 2.5 hours on, its values change: the same series, from its next fire.
    await clock.set('2026-03-07T12:30:00.000Z');
    expect((await service.update(made.id, { values: {} }, admin)).next_run_at).toBe('2026-03-07T13:00:30.000Z');
    // Its expression changes: the new period counts from the change.
    expect((await service.update(made.id, { expression: 'rate(2 hours)' }, admin)).next_run_at).toBe(
      '2026-03-07T14:30:00.000Z',
    );
    // A cron has no StartDate: Scheduler fires at its times.
    await service.update(made.id, { expression: 'cron(0 2 * * ? *)' }, admin);
    expect(startDates()).toEqual([
      '2026-03-07T11:00:30.000Z',
      '2026-03-07T13:00:30.000Z',
      '2026-03-07T14:30:00.000Z',
      undefined,
    ]);
  });
});
