import type { RequestAuthenticator } from '../../shared/auth/authenticator.js';
import { createServiceApp, type ServiceApp } from '../../shared/http/service-app.js';
import { AskAnswer, AskRequest, DomainParams, SuggestionList, SuggestRequest } from './schemas.js';
import type { QueryService } from './service.js';

export interface QueryDeps {
  readonly authenticator: RequestAuthenticator;
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
    )
    .endpoint(
      {
        name: 'ask_question',
        method: 'post',
        path: '/api/query/ask',
        summary:
          "SQL that answers a question over a domain's tables (sdk): written by the model when one is configured, else the suggestion (E12) it asks for",
        tags: QUERY,
        access: 'user',
        request: { body: AskRequest, bodyRequired: true },
        success: { status: 200, description: 'The SQL and the tables it reads', schema: AskAnswer },
        errors: [404, 409],
      },
      async (c, { body }) => c.json(await service.ask(body.domain, body.prompt), 200),
    );
}
