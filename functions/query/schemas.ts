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
