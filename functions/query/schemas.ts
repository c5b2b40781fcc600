import { z } from '@hono/zod-openapi';

export const MAX_NAME = 255;

const domainName = () => z.string().min(1).max(MAX_NAME).openapi({ description: 'the name of a catalog domain' });

export const DomainParams = z.object({ domain: domainName() });

/** E12's POST body. */
export const SuggestRequest = z.strictObject({ domain: domainName() }).openapi('SuggestRequest');
export type SuggestRequest = z.infer<typeof SuggestRequest>;

export const Suggestion = z
  .object({
    suggestion_id: z.string().openapi({ description: 'stable: derived from the domain and the SQL' }),
    domain: z.string().openapi({ description: 'the domain the question is about' }),
    question: z.string().openapi({ description: 'the question in plain English' }),
    sql: z.string().openapi({ description: 'one SELECT over the real columns of the tables named' }),
    tables: z.array(z.string()).openapi({ description: 'the tables the SQL reads, as `catalog.schema.table`' }),
  })
  .openapi('Suggestion');
export type Suggestion = z.infer<typeof Suggestion>;

export const SuggestionList = z.array(Suggestion);
