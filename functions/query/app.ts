import type { RequestAuthenticator } from '../../shared/auth/authenticator.js';
import { createServiceApp, type ServiceApp } from '../../shared/http/service-app.js';
import { AskAnswer, AskRequest, DomainParams, SuggestionList, SuggestRequest } from './schemas.js';
import type { QueryService } from './service.js';

export interface QueryDeps {
  readonly authenticator: RequestAuthenticator;
  readonly service: QueryService;
}

const QUERY = ['query'];

/**
 * The NX1 SDK's saved queries (`queries.create_from_suggestion`, `get_queries`, `delete_query`;
 * `nx1 query create|list|delete`): not offered here (docs/sdk.md), their 404s say what is.
 */
const NO_SAVED_QUERIES = 'Saved queries are not offered by this service';
const USE_INSTEAD =
  "for SQL that answers a question use POST /api/query/ask (the SDK's queries.ask), or take a suggestion's own SQL (its `sql`, from POST /api/query/suggest); a data product takes a suggestion as `suggestion_id` (POST /api/dataproduct)";

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
    )
    .notOffered(
      'post',
      '/api/query',
      `${NO_SAVED_QUERIES}: no query is created from a suggestion. Instead, ${USE_INSTEAD}`,
    )
    .notOffered('get', '/api/query', `${NO_SAVED_QUERIES}: there are none to list. Instead, ${USE_INSTEAD}`)
    .notOffered('delete', '/api/query/{query_id}', `${NO_SAVED_QUERIES}: there are none to delete`);
}
