import type { Authenticator } from '../../shared/auth/authenticator.js';
import { createServiceApp, type ServiceApp } from '../../shared/http/app.js';
import type { Runtime } from '../../shared/runtime.js';
import { metadataCatalog, metastore } from '../../shared/adapters/metadata.js';
import { configuredChatModel } from '../../shared/adapters/openai.js';
import { DomainParams, SuggestionList, SuggestRequest } from './schemas.js';
import { QueryService } from './service.js';

export interface QueryDeps {
  readonly authenticator: Authenticator;
  readonly service: QueryService;
}

const QUERY = ['query'];

export function createQueryApp({ authenticator, service }: QueryDeps): ServiceApp {
  return createServiceApp(authenticator)
    .endpoint(
      {
        name: 'suggest_questions',
        method: 'get',
        path: '/api/query/suggest/{domain}',
        summary: "Suggested questions with SQL over a domain's tables (E12)",
        tags: QUERY,
        access: 'user',
        request: { params: DomainParams },
        success: { status: 200, description: 'Suggested questions', schema: SuggestionList },
        errors: [404],
      },
      async (c, { params }) => c.json(await service.suggest(params.domain), 200),
    )
    .endpoint(
      {
        name: 'suggest_questions_post',
        method: 'post',
        path: '/api/query/suggest',
        summary: "Suggested questions with SQL over a domain's tables (E12), the domain in the body",
        tags: QUERY,
        access: 'user',
        request: { body: SuggestRequest, bodyRequired: true },
        success: { status: 200, description: 'Suggested questions', schema: SuggestionList },
        errors: [404],
      },
      async (c, { body }) => c.json(await service.suggest(body.domain), 200),
    );
}

/** The service wired to the configured metastore and catalog. */
export function queryService(runtime: Runtime): QueryService {
  return new QueryService(metastore(runtime), metadataCatalog(runtime), configuredChatModel(runtime.config));
}

/** The composition root used by the Lambda handler and the local platform. */
export function queryApp(runtime: Runtime): ServiceApp {
  return createQueryApp({ authenticator: runtime.authenticator, service: queryService(runtime) });
}
