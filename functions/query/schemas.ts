import * as z from 'zod/mini';
import { component, doc } from '../../shared/schema.js';

export const MAX_NAME = 255;

const domainName = () => doc(z.string().check(z.minLength(1), z.maxLength(MAX_NAME)), 'the name of a catalog domain');

export const DomainParams = z.object({ domain: domainName() });

/** E12's POST body. */
export const SuggestRequest = component('SuggestRequest', z.strictObject({ domain: domainName() }));
export type SuggestRequest = z.infer<typeof SuggestRequest>;

export const Suggestion = component(
  'Suggestion',
  z.object({
    suggestion_id: doc(z.string(), 'stable: derived from the domain and the SQL'),
    domain: doc(z.string(), 'the domain the question is about'),
    question: doc(z.string(), 'the question in plain English'),
    sql: doc(z.string(), 'one SELECT over the real columns of the tables named'),
    tables: doc(z.array(z.string()), 'the tables the SQL reads, as `catalog.schema.table`'),
  }),
);
export type Suggestion = z.infer<typeof Suggestion>;

export const SuggestionList = z.array(Suggestion);

/** The longest prompt asked about: a question, not a document. */
export const MAX_PROMPT = 4000;

/** `POST /api/query/ask`'s body (docs/sdk.md, the SDK's `queries.ask`). */
export const AskRequest = component(
  'AskRequest',
  z.strictObject({
    domain: domainName(),
    prompt: doc(
      z.string().check(z.minLength(1, { abort: true }), z.maxLength(MAX_PROMPT, { abort: true }), z.regex(/\S/)),
      'the question in plain words (1–4000 characters, not only blanks)',
      { example: 'How many orders were placed?' },
    ),
  }),
);
export type AskRequest = z.infer<typeof AskRequest>;

export const AskAnswer = component(
  'AskAnswer',
  z.object({
    domain: doc(z.string(), 'the domain asked about'),
    prompt: doc(z.string(), 'the question as asked'),
    sql: doc(z.string(), "one read-only SELECT over the domain's tables that answers the question"),
    tables: doc(z.array(z.string()), 'the tables the SQL reads, as `catalog.schema.table`'),
    answer: doc(z.nullable(z.string()), 'null: the service writes the SQL and does not run it'),
    suggestion_id: doc(
      z.optional(z.string()),
      "present when the SQL is one of the domain's suggested questions (E12): that suggestion's id",
    ),
  }),
);
export type AskAnswer = z.infer<typeof AskAnswer>;
