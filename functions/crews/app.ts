import * as z from 'zod/mini';
import type { RequestAuthenticator } from '../../shared/auth/authenticator.js';
import { createServiceApp, pageJson, type ServiceApp } from '../../shared/http/service-app.js';
import type { IdempotencyKeys } from '../../shared/http/idempotency.js';
import { PageQuery } from '../../shared/params.js';
import {
  BulkCancelRequest,
  BulkCancelResult,
  CancelRequest,
  RunLogEntry,
  DecisionRequest,
  CrewRun,
  EventsQuery,
  RunHandle,
  RunListQuery,
  RunParams,
  RerunRequest,
  RunRequest,
  StepParams,
} from './runs/run-schemas.js';
import { CrewSchedule, ScheduleParams, SchedulePatch, ScheduleRequest } from './schedules/schedule-schemas.js';
import { CrewResult, CrewType, CrewTypeRunRequest } from './sdk-schemas.js';
import { CrewTemplate, TemplateParams, TemplateRequest } from './templates/template-schemas.js';
import { MAX_BULK_CANCEL } from './limits.js';
import type { ScheduleService } from './schedules/schedule-service.js';
import type { RunLogService } from './runs/run-log-service.js';
import type { RunService } from './runs/run-service.js';
import type { CrewsSdk } from './sdk-service.js';
import type { TemplateService } from './templates/template-service.js';

export interface CrewsDeps {
  readonly authenticator: RequestAuthenticator;
  /** Where `Idempotency-Key` answers are kept (docs/identity-and-keys.md, idempotency keys). */
  readonly idempotency?: IdempotencyKeys;
  readonly templates: TemplateService;
  readonly runs: RunService;
  readonly runLog: RunLogService;
  /** The NX1 SDK's crews client (docs/sdk.md). */
  readonly sdk: CrewsSdk;
  readonly schedules: ScheduleService;
}

const TEMPLATES = ['crew templates'];
const RUNS = ['crew runs'];
const SCHEDULES = ['crew schedules'];
/** The NX1 SDK's crews client (docs/sdk.md). */
const CREWS = ['crews (sdk)'];

export function createCrewsApp({
  authenticator,
  idempotency,
  templates,
  runs,
  runLog,
  sdk,
  schedules,
}: CrewsDeps): ServiceApp {
  return createServiceApp(authenticator, idempotency)
    .endpoint(
      {
        name: 'create_template',
        method: 'post',
        path: '/api/crew-templates',
        summary: 'Declare a crew template',
        tags: TEMPLATES,
        access: { anyRole: ['admin'] },
        idempotent: true,
        request: { body: TemplateRequest, bodyRequired: true },
        success: { status: 201, description: 'The new template', schema: CrewTemplate },
      },
      async (c, { body, caller }) => c.json(await templates.createTemplate(body, caller), 201),
    )
    .endpoint(
      {
        name: 'list_templates',
        method: 'get',
        path: '/api/crew-templates',
        summary: 'List crew templates, oldest first',
        tags: TEMPLATES,
        access: 'user',
        request: { query: PageQuery },
        success: { status: 200, description: 'Templates; more in `X-Next-Cursor`', schema: z.array(CrewTemplate) },
      },
      async (c, { query }) => {
        const page = await templates.listTemplates(query.limit, query.cursor);
        return pageJson(c, page);
      },
    )
    .endpoint(
      {
        name: 'get_template',
        method: 'get',
        path: '/api/crew-templates/{template_id}',
        summary: 'Read a crew template (its variables and steps)',
        tags: TEMPLATES,
        access: 'user',
        request: { params: TemplateParams },
        success: { status: 200, description: 'The template', schema: CrewTemplate },
        errors: [404],
      },
      async (c, { params }) => c.json(await templates.getTemplate(params.template_id), 200),
    )
    .endpoint(
      {
        name: 'replace_template',
        method: 'put',
        path: '/api/crew-templates/{template_id}',
        summary: 'Replace a crew template as a whole',
        tags: TEMPLATES,
        access: { anyRole: ['admin'] },
        request: { params: TemplateParams, body: TemplateRequest, bodyRequired: true },
        success: { status: 200, description: 'The template', schema: CrewTemplate },
        errors: [404],
      },
      async (c, { params, body, caller }) =>
        c.json(await templates.replaceTemplate(params.template_id, body, caller), 200),
    )
    .endpoint(
      {
        name: 'delete_template',
        method: 'delete',
        path: '/api/crew-templates/{template_id}',
        summary: 'Delete a crew template (runs already started go on)',
        tags: TEMPLATES,
        access: { anyRole: ['admin'] },
        request: { params: TemplateParams },
        success: { status: 204, description: 'Deleted' },
        errors: [404],
      },
      async (c, { params, caller }) => {
        await templates.deleteTemplate(params.template_id, caller);
        // Its schedules fire nothing more (a fire finding the template gone disables it too).
        await schedules.templateDeleted(params.template_id, caller);
        return c.body(null, 204);
      },
    )
    .endpoint(
      {
        name: 'run_template',
        method: 'post',
        path: '/api/crew-templates/{template_id}/run',
        summary: 'Run a crew template (E2); poll its events with the correlation id',
        tags: RUNS,
        access: 'user',
        // Sealed when kept: with a `webhook_url`, the answer holds the run's webhook secret.
        idempotent: true,
        request: { params: TemplateParams, body: RunRequest, bodyRequired: true },
        success: { status: 202, description: 'The run is queued', schema: RunHandle },
        errors: [404],
      },
      async (c, { params, body, caller }) => {
        const { correlation_id, webhook_secret } = await runs.startRun(
          params.template_id,
          body.values,
          caller,
          body.webhook_url,
        );
        if (webhook_secret !== undefined) c.set('answerHoldsSecret', true);
        return c.json(
          {
            correlation_id,
            status: 'pending' as const,
            message: `Run queued; poll /api/events/${correlation_id}?start=0`,
            ...(webhook_secret !== undefined ? { webhook_secret } : {}),
          },
          202,
        );
      },
    )
    .endpoint(
      {
        name: 'list_runs',
        method: 'get',
        path: '/api/crew-runs',
        summary:
          "List crew runs, newest first: the caller's own (an admin's: every run, or with `created_by=me` their own)",
        tags: RUNS,
        access: 'user',
        request: { query: RunListQuery },
        success: { status: 200, description: 'Runs; more in `X-Next-Cursor`', schema: z.array(CrewRun) },
      },
      async (c, { query, caller }) => {
        const page = await runs.listRuns(
          {
            ...(query.status !== undefined ? { status: query.status } : {}),
            ...(query.template_id !== undefined ? { templateId: query.template_id } : {}),
            ...(query.created_by !== undefined ? { createdBy: query.created_by } : {}),
          },
          query.limit,
          query.cursor,
          caller,
        );
        return pageJson(c, page);
      },
    )
    .endpoint(
      {
        // Before `/api/crew-runs/{correlation_id}`: a POST of this path is the bulk cancel
        // (the run routes take GET there), and PUT or DELETE of it answer 405 with both.
        name: 'cancel_runs',
        method: 'post',
        path: '/api/crew-runs/cancel',
        summary:
          "Cancel every unfinished crew run matching the filters (at least one): the caller's own; an admin's, everyone's unless `created_by` is `me`",
        tags: RUNS,
        access: 'user',
        request: { body: BulkCancelRequest, bodyRequired: true },
        success: {
          status: 200,
          description: `How many runs matched and how many this call cancelled (at most ${MAX_BULK_CANCEL} per call)`,
          schema: BulkCancelResult,
        },
      },
      async (c, { body, caller }) => c.json(await runs.cancelRuns(body, caller), 200),
    )
    .endpoint(
      {
        name: 'get_run',
        method: 'get',
        path: '/api/crew-runs/{correlation_id}',
        summary: 'The status of a crew run',
        tags: RUNS,
        access: 'user',
        request: { params: RunParams },
        success: { status: 200, description: 'The run', schema: CrewRun },
        errors: [403, 404],
      },
      async (c, { params, caller }) => c.json(await runs.getRun(params.correlation_id, caller), 200),
    )
    .endpoint(
      {
        name: 'cancel_run',
        method: 'post',
        path: '/api/crew-runs/{correlation_id}/cancel',
        summary: 'Cancel a crew run that has not finished: no step starts after the answer',
        tags: RUNS,
        access: 'user',
        request: { params: RunParams, body: CancelRequest },
        success: { status: 200, description: 'The run, `cancelled`', schema: CrewRun },
        errors: [403, 404, 409],
      },
      async (c, { params, body, caller }) =>
        c.json(await runs.cancelRun(params.correlation_id, body?.reason, caller), 200),
    )
    .endpoint(
      {
        name: 'retry_run',
        method: 'post',
        path: '/api/crew-runs/{correlation_id}/retry',
        summary:
          'Continue a failed or cancelled crew run under the same id: completed steps keep their outputs, the failed (or next) step runs again',
        tags: RUNS,
        access: 'user',
        request: { params: RunParams },
        success: { status: 202, description: 'The run, `pending` again (event `run.retried`)', schema: CrewRun },
        errors: [403, 404, 409],
      },
      async (c, { params, caller }) => c.json(await runs.retryRun(params.correlation_id, caller), 202),
    )
    .endpoint(
      {
        name: 'rerun_run',
        method: 'post',
        path: '/api/crew-runs/{correlation_id}/rerun',
        summary:
          'Rerun a finished crew run from a step as a new run (`rerun_of`): earlier steps keep their outputs, the values may be corrected',
        tags: RUNS,
        access: 'user',
        idempotent: true,
        request: { params: RunParams, body: RerunRequest, bodyRequired: true },
        success: { status: 202, description: 'The new run is queued', schema: RunHandle },
        errors: [403, 404, 409],
      },
      async (c, { params, body, caller }) => {
        const { correlation_id } = await runs.rerunRun(params.correlation_id, body.from_step, body.values, caller);
        return c.json(
          {
            correlation_id,
            status: 'pending' as const,
            message: `Rerun of ${params.correlation_id} queued; poll /api/events/${correlation_id}?start=0`,
          },
          202,
        );
      },
    )
    .endpoint(
      {
        name: 'decide_step',
        method: 'post',
        path: '/api/crew-runs/{correlation_id}/steps/{step_id}/decision',
        summary:
          "Approve or reject a waiting `approval` step: a Bearer session with the step's role, never the run's starter",
        tags: RUNS,
        // The session is checked before the request is read; the step's role once the run is
        // (RunService.decideStep has the whole order of checks).
        access: { anyRole: 'resource', session: true },
        request: { params: StepParams, body: DecisionRequest, bodyRequired: true },
        success: {
          status: 200,
          description: 'The run: `running` again after an approval, `failed` after a rejection',
          schema: CrewRun,
        },
        errors: [404, 409],
      },
      async (c, { params, body, caller }) =>
        c.json(await runs.decideStep(params.correlation_id, params.step_id, body, caller), 200),
    )
    .endpoint(
      {
        name: 'poll_events',
        method: 'get',
        path: '/api/events/{correlation_id}',
        summary: 'Poll the events of a crew run from an index (E13), optionally waiting for the next (long poll)',
        tags: RUNS,
        access: 'user',
        request: { params: RunParams, query: EventsQuery },
        success: {
          status: 200,
          description:
            'Events with index ≥ start, ascending, at most 1000 and at most 1 MiB of JSON (continue from the last index + 1)',
          schema: z.array(RunLogEntry),
        },
        // 429: the caller already has as many long polls waiting as it may (the fair-use limits).
        errors: [403, 404, 429],
      },
      async (c, { params, query, caller }) =>
        c.json(
          await runLog.runLog(
            params.correlation_id,
            query.start ?? query.start_index ?? 0,
            caller,
            query.wait ?? 0,
            // aborted when the client goes away: its waiting poll ends and gives its place back
            c.req.raw.signal,
          ),
          200,
        ),
    )
    .endpoint(
      {
        name: 'list_crew_types',
        method: 'get',
        path: '/api/crews/types',
        summary: "List crew types (the SDK's `crews.list_crew_types`): every crew template, by name, oldest first",
        tags: CREWS,
        access: 'user',
        request: { query: PageQuery },
        success: { status: 200, description: 'Crew types; more in `X-Next-Cursor`', schema: z.array(CrewType) },
      },
      async (c, { query }) => pageJson(c, await sdk.crewTypes(query.limit, query.cursor)),
    )
    .endpoint(
      {
        name: 'run_crew',
        method: 'post',
        path: '/api/crews/run',
        summary:
          "Run a crew type (the SDK's `crews.run_crew`): E2 on the one crew template of that name, `task_input` as its values",
        tags: CREWS,
        access: 'user',
        idempotent: true,
        request: { body: CrewTypeRunRequest, bodyRequired: true },
        success: { status: 202, description: 'The run is queued (the same handle as E2)', schema: RunHandle },
        // 404: no template has that name; 409: several have it (names are not unique).
        errors: [404, 409],
      },
      async (c, { body, caller }) => {
        const { correlation_id } = await sdk.runCrew(body.crew_type, body.task_input, caller);
        return c.json(
          {
            correlation_id,
            status: 'pending' as const,
            message: `Run queued; read its result at /api/crews/results/${correlation_id}`,
          },
          202,
        );
      },
    )
    .endpoint(
      {
        name: 'get_crew_result',
        method: 'get',
        path: '/api/crews/results/{correlation_id}',
        summary: "The status and outputs of a crew run (the SDK's `crews.get_crew_result`)",
        tags: CREWS,
        access: 'user',
        request: { params: RunParams },
        success: { status: 200, description: "The run's status, outputs and result", schema: CrewResult },
        errors: [403, 404],
      },
      async (c, { params, caller }) => c.json(await sdk.crewResult(params.correlation_id, caller), 200),
    )
    .endpoint(
      {
        name: 'create_schedule',
        method: 'post',
        path: '/api/crew-schedules',
        summary: 'Schedule runs of a crew template (EventBridge Scheduler expressions and time zones)',
        tags: SCHEDULES,
        access: { anyRole: ['admin'] },
        idempotent: true,
        request: { body: ScheduleRequest, bodyRequired: true },
        success: { status: 201, description: 'The schedule, with its next fire', schema: CrewSchedule },
        errors: [404],
      },
      async (c, { body, caller }) => c.json(await schedules.create(body, caller), 201),
    )
    .endpoint(
      {
        name: 'list_schedules',
        method: 'get',
        path: '/api/crew-schedules',
        summary: 'List crew schedules, oldest first',
        tags: SCHEDULES,
        access: 'user',
        request: { query: PageQuery },
        success: { status: 200, description: 'Schedules; more in `X-Next-Cursor`', schema: z.array(CrewSchedule) },
      },
      async (c, { query }) => pageJson(c, await schedules.list(query.limit, query.cursor)),
    )
    .endpoint(
      {
        name: 'get_schedule',
        method: 'get',
        path: '/api/crew-schedules/{schedule_id}',
        summary: 'Read a crew schedule',
        tags: SCHEDULES,
        access: 'user',
        request: { params: ScheduleParams },
        success: { status: 200, description: 'The schedule', schema: CrewSchedule },
        errors: [404],
      },
      async (c, { params }) => c.json(await schedules.get(params.schedule_id), 200),
    )
    .endpoint(
      {
        name: 'update_schedule',
        method: 'patch',
        path: '/api/crew-schedules/{schedule_id}',
        summary: 'Change a crew schedule: its expression, time zone, values, overlap or whether it is enabled',
        tags: SCHEDULES,
        access: { anyRole: ['admin'] },
        request: { params: ScheduleParams, body: SchedulePatch, bodyRequired: true },
        success: { status: 200, description: 'The schedule', schema: CrewSchedule },
        errors: [404, 409],
      },
      async (c, { params, body, caller }) => c.json(await schedules.update(params.schedule_id, body, caller), 200),
    )
    .endpoint(
      {
        name: 'delete_schedule',
        method: 'delete',
        path: '/api/crew-schedules/{schedule_id}',
        summary: 'Delete a crew schedule (the runs it started go on)',
        tags: SCHEDULES,
        access: { anyRole: ['admin'] },
        request: { params: ScheduleParams },
        success: { status: 204, description: 'Deleted' },
        errors: [404],
      },
      async (c, { params, caller }) => {
        await schedules.delete(params.schedule_id, caller);
        return c.body(null, 204);
      },
    )
    .endpoint(
      {
        name: 'list_schedule_runs',
        method: 'get',
        path: '/api/crew-schedules/{schedule_id}/runs',
        summary: 'The runs a crew schedule started, newest first (admins only: runs carry their values and errors)',
        tags: SCHEDULES,
        // Admins only: each run carries its values, progress and error, which GET /api/crew-runs/{id}
        // shows only to its starter, admins and the approvers of a waiting step (docs/crews.md).
        access: { anyRole: ['admin'] },
        request: { params: ScheduleParams, query: PageQuery },
        success: { status: 200, description: 'Runs; more in `X-Next-Cursor`', schema: z.array(CrewRun) },
        errors: [404],
      },
      async (c, { params, query }) =>
        pageJson(c, await schedules.runsOf(params.schedule_id, query.limit, query.cursor)),
    );
}
