import * as z from 'zod/mini';
import type { RequestAuthenticator } from '../../shared/auth/authenticator.js';
import { createServiceApp, pageJson, type ServiceApp } from '../../shared/http/service-app.js';
import type { IdempotencyKeys } from '../../shared/http/idempotency.js';
import { PageQuery } from '../../shared/params.js';
import {
  CreateVersionRequest,
  DecisionsQuery,
  DecisionSummary,
  DiffQuery,
  HistoryEntry,
  DecisionKeyParams,
  LifecycleBody,
  VersionDetail,
  VersionDiff,
  VersionParams,
  VersionSummary,
} from './schemas.js';
import type { Action, DecisionService } from './service.js';

export interface DecisionsDeps {
  readonly authenticator: RequestAuthenticator;
  /** Where `Idempotency-Key` answers are kept. */
  readonly idempotency?: IdempotencyKeys;
  readonly service: DecisionService;
}

const TAGS = ['decisions'];
const BASE = '/api/decisions/{workspace}/{key}';

const lifecycleRoute = (
  action: Action,
  summary: string,
  access: 'user' | { anyRole: readonly ('approver' | 'admin')[]; session?: boolean },
) =>
  ({
    name: `${action}_version`,
    method: 'post',
    path: `${BASE}/versions/{version}/${action}`,
    summary,
    tags: TAGS,
    access,
    request: { params: VersionParams, body: LifecycleBody },
    success: { status: 200, description: 'The version after the transition', schema: VersionSummary },
    errors: [404, 409],
  }) as const;

export function createDecisionsApp({ authenticator, idempotency, service }: DecisionsDeps): ServiceApp {
  const app = createServiceApp(authenticator, idempotency)
    .endpoint(
      {
        name: 'list_decisions',
        method: 'get',
        path: '/api/decisions',
        summary:
          'List decisions (each workspace and key with versions) by workspace, then key: the latest and the published version',
        tags: TAGS,
        access: 'user',
        request: { query: DecisionsQuery },
        success: {
          status: 200,
          description:
            'Decisions; more in `X-Next-Cursor`. A key whose versions were all created before this list was is listed from the next write of one of them on',
          schema: z.array(DecisionSummary),
        },
      },
      async (c, { query }) => pageJson(c, await service.listDecisions(query.workspace, query.limit, query.cursor)),
    )
    .endpoint(
      {
        name: 'create_version',
        method: 'post',
        path: `${BASE}/versions`,
        summary: 'Create the next version of a decision (draft)',
        tags: TAGS,
        access: 'user',
        idempotent: true,
        request: { params: DecisionKeyParams, body: CreateVersionRequest, bodyRequired: true },
        success: { status: 201, description: 'The new draft version', schema: VersionDetail },
      },
      async (c, { params, body, caller }) =>
        c.json(await service.createVersion(params.workspace, params.key, body, caller), 201),
    )
    .endpoint(
      {
        name: 'list_versions',
        method: 'get',
        path: `${BASE}/versions`,
        summary: 'List the versions of a decision, ascending',
        tags: TAGS,
        access: 'user',
        request: { params: DecisionKeyParams, query: PageQuery },
        success: { status: 200, description: 'Versions; more in `X-Next-Cursor`', schema: z.array(VersionSummary) },
        errors: [404],
      },
      async (c, { params, query }) => {
        const page = await service.listVersions(params.workspace, params.key, query.limit, query.cursor);
        return pageJson(c, page);
      },
    )
    .endpoint(
      {
        name: 'get_version',
        method: 'get',
        path: `${BASE}/versions/{version}`,
        summary: 'Read one version with its content',
        tags: TAGS,
        access: 'user',
        request: { params: VersionParams },
        success: { status: 200, description: 'The version', schema: VersionDetail },
        errors: [404],
      },
      async (c, { params }) => c.json(await service.getVersion(params.workspace, params.key, params.version), 200),
    )
    .endpoint(
      {
        name: 'get_published',
        method: 'get',
        path: `${BASE}/published`,
        summary: 'The newest approved version',
        tags: TAGS,
        access: 'user',
        request: { params: DecisionKeyParams },
        success: { status: 200, description: 'The published version', schema: VersionDetail },
        errors: [404],
      },
      async (c, { params }) => c.json(await service.published(params.workspace, params.key), 200),
    )
    .endpoint(
      {
        name: 'get_version_history',
        method: 'get',
        path: `${BASE}/versions/{version}/history`,
        summary: 'Every transition of a version, oldest first',
        tags: TAGS,
        access: 'user',
        request: { params: VersionParams },
        success: { status: 200, description: 'The transitions', schema: z.array(HistoryEntry) },
        errors: [404],
      },
      async (c, { params }) => c.json(await service.history(params.workspace, params.key, params.version), 200),
    )
    .endpoint(
      {
        name: 'get_version_diff',
        method: 'get',
        path: `${BASE}/versions/{version}/diff`,
        summary: "What changed in a version's content against the published version (default) or another version",
        tags: TAGS,
        access: 'user',
        request: { params: VersionParams, query: DiffQuery },
        success: {
          status: 200,
          description: 'The changes, as JSON Pointer paths with old and new values',
          schema: VersionDiff,
        },
        errors: [404],
      },
      async (c, { params, query }) =>
        c.json(await service.diff(params.workspace, params.key, params.version, query.against ?? 'published'), 200),
    );

  const lifecycle: [Action, string, Parameters<typeof lifecycleRoute>[2]][] = [
    ['submit', 'Submit a draft for review', 'user'],
    ['approve', 'Approve a submitted version (four-eyes rule, E1)', { anyRole: ['approver'], session: true }],
    ['reject', 'Send a submitted version back to draft', { anyRole: ['approver'], session: true }],
    ['retire', 'Retire an approved version', { anyRole: ['approver', 'admin'] }],
  ];
  for (const [action, summary, access] of lifecycle) {
    app.endpoint(lifecycleRoute(action, summary, access), async (c, { params, body, caller }) =>
      c.json(await service.transition(action, params.workspace, params.key, params.version, body?.notes, caller), 200),
    );
  }
  return app;
}
