import * as z from 'zod/mini';
import type { RequestAuthenticator } from '../../shared/auth/authenticator.js';
import { createServiceApp, pageJson, type ServiceApp } from '../../shared/http/service-app.js';
import type { IdempotencyKeys } from '../../shared/http/idempotency.js';
import { PageQuery } from '../../shared/params.js';
import { CreateDatasetRequest, FinetuneJob, JobDeleted, JobParams } from './schemas.js';
import type { FinetuneService } from './service.js';

export interface FinetuneDeps {
  readonly authenticator: RequestAuthenticator;
  /** Where `Idempotency-Key` answers are kept (docs/identity-and-keys.md, idempotency keys). */
  readonly idempotency?: IdempotencyKeys;
  readonly service: FinetuneService;
}

const TAGS = ['fine-tuning datasets'];
const BASE = '/api/finetune/datasets';

export function createFinetuneApp({ authenticator, idempotency, service }: FinetuneDeps): ServiceApp {
  return createServiceApp(authenticator, idempotency)
    .endpoint(
      {
        name: 'create_dataset',
        method: 'post',
        path: BASE,
        summary: 'Start a fine-tuning dataset job',
        tags: TAGS,
        access: 'user',
        idempotent: true,
        request: { body: CreateDatasetRequest, bodyRequired: true },
        success: { status: 201, description: 'The new job, pending', schema: FinetuneJob },
      },
      async (c, { body, caller }) => c.json(await service.create(body, caller), 201),
    )
    .endpoint(
      {
        name: 'list_datasets',
        method: 'get',
        path: BASE,
        summary: "List the caller's fine-tuning dataset jobs (an admin's list holds all), oldest first",
        tags: TAGS,
        access: 'user',
        request: { query: PageQuery },
        success: { status: 200, description: 'Jobs; more in `X-Next-Cursor`', schema: z.array(FinetuneJob) },
      },
      async (c, { query, caller }) => {
        const page = await service.list(caller, query.limit, query.cursor);
        return pageJson(c, page);
      },
    )
    .endpoint(
      {
        name: 'get_dataset',
        method: 'get',
        path: `${BASE}/{job_id}`,
        summary: 'Read a fine-tuning dataset job (its owner or an admin)',
        tags: TAGS,
        access: 'user',
        request: { params: JobParams },
        success: { status: 200, description: 'The job', schema: FinetuneJob },
        errors: [403, 404],
      },
      async (c, { params, caller }) => c.json(await service.get(params.job_id, caller), 200),
    )
    .endpoint(
      {
        name: 'delete_dataset',
        method: 'delete',
        path: `${BASE}/{job_id}`,
        summary: 'Delete a fine-tuning dataset job and its stored artifacts (E11; its owner or an admin)',
        tags: TAGS,
        access: 'user',
        request: { params: JobParams },
        success: { status: 200, description: 'Deleted', schema: JobDeleted },
        errors: [403, 404],
      },
      async (c, { params, caller }) => c.json(await service.delete(params.job_id, caller), 200),
    );
}
