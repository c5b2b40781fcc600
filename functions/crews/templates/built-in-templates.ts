import type { TemplateRequest } from './template-schemas.js';

/**
 * The crew templates the service ships (docs/sdk.md), named like the crew types the NX1 SDK's
 * CLI offers (`nx1 crews run --crew-type ...`). Each renders a brief from its inputs and asks
 * the model at `LLM_BASE_URL`; without one, its `llm` step fails with the step's own message.
 *
 * The ids are fixed: start-up creates a missing one with a conditional put on its id, so
 * processes starting at once make one each, and one an admin replaced (same id) is never
 * created again.
 */
export interface BuiltInTemplate extends Omit<
  TemplateRequest,
  'max_concurrent_runs' | 'concurrency_key' | 'run_timeout_seconds'
> {
  readonly id: string;
  readonly description: string;
}

/** Who `created_by` names on a built-in template (its domain event's actor is null: no caller). */
export const BUILT_IN_AUTHOR = 'dpm (built-in)';

const SQL_RULES =
  'Write SQL in the Trino dialect, name tables as catalog.schema.table, and say which tables each query reads. When something is unknown, say so instead of inventing it.';

export const BUILT_IN_TEMPLATES: readonly BuiltInTemplate[] = [
  {
    id: '15227761-d0a7-4b9b-9f28-2bbf19101351',
    name: 'ask',
    description: "Answers a question about the organisation's data, with the SQL that answers it when there is one",
    variables: [
      { name: 'question', type: 'string', required: true, description: 'the question, in plain words' },
      { name: 'domain', type: 'string', required: false, description: 'the data domain it is about (optional)' },
      {
        name: 'tables',
        type: 'array',
        required: false,
        default: [],
        description: 'tables the answer may use, as catalog.schema.table (optional)',
      },
    ],
    steps: [
      {
        id: 'brief',
        kind: 'render',
        template: 'Question: {{question}}\nData domain: {{domain}}\nTables that may be used: {{tables}}',
      },
      {
        id: 'answer',
        kind: 'llm',
        system: `You are the data platform's analyst. Answer the question briefly and precisely. ${SQL_RULES}`,
        prompt: '{{steps.brief.output}}',
      },
    ],
  },
  {
    id: 'da8ba55b-e8e6-4de4-a1a9-5cdee9ded260',
    name: 'data_engineering',
    description:
      'Plans a data-engineering task (ingestion, transformation, quality checks) with the DDL and SQL it needs',
    variables: [
      {
        name: 'task',
        type: 'string',
        required: true,
        description: "what to build, in plain words (e.g. 'a daily table of orders without duplicates')",
      },
      {
        name: 'tables',
        type: 'array',
        required: false,
        default: [],
        description: 'the source tables, as catalog.schema.table (optional)',
      },
      {
        name: 'target',
        type: 'string',
        required: false,
        description: 'the table to write, as catalog.schema.table (optional)',
      },
    ],
    steps: [
      {
        id: 'brief',
        kind: 'render',
        template: 'Task: {{task}}\nSource tables: {{tables}}\nTarget table: {{target}}',
      },
      {
        id: 'plan',
        kind: 'llm',
        system: `You are a data engineer. Give a short numbered plan, then the DDL and SQL of each step, then the data-quality checks to run. ${SQL_RULES}`,
        prompt: '{{steps.brief.output}}',
      },
    ],
  },
  {
    id: 'e6306301-344f-4033-954f-2a7ec5c8f138',
    name: 'data_suggestion',
    description: 'Suggests questions worth asking of a data domain, each with the SQL that answers it',
    variables: [
      { name: 'domain', type: 'string', required: true, description: 'the data domain' },
      {
        name: 'tables',
        type: 'array',
        required: false,
        default: [],
        description: "the domain's tables, as catalog.schema.table, with their columns if known (optional)",
      },
      { name: 'count', type: 'integer', required: false, default: 5, description: 'how many suggestions (default 5)' },
    ],
    steps: [
      {
        id: 'brief',
        kind: 'render',
        template: 'Data domain: {{domain}}\nTables: {{tables}}\nNumber of suggestions: {{count}}',
      },
      {
        id: 'suggestions',
        kind: 'llm',
        system: `You suggest questions that people in a business domain would ask of its data. Answer with a JSON array only, each item {"question", "sql", "tables"}. ${SQL_RULES}`,
        prompt: '{{steps.brief.output}}',
      },
    ],
  },
  {
    id: 'd5590d8e-627e-4da3-bc72-6ca88d19059c',
    name: 'semantic_model',
    description: "Drafts a semantic model (entities, dimensions, measures, joins) of a data domain's tables",
    variables: [
      { name: 'domain', type: 'string', required: true, description: 'the data domain' },
      {
        name: 'tables',
        type: 'array',
        required: false,
        default: [],
        description: 'the tables to model, as catalog.schema.table, with their columns if known (optional)',
      },
      {
        name: 'notes',
        type: 'string',
        required: false,
        description: 'what the model is for, or conventions to follow (optional)',
      },
    ],
    steps: [
      {
        id: 'brief',
        kind: 'render',
        template: 'Data domain: {{domain}}\nTables: {{tables}}\nNotes: {{notes}}',
      },
      {
        id: 'model',
        kind: 'llm',
        system: `You are an analytics engineer. Draft a semantic model in YAML: entities with their keys, dimensions, measures with their aggregation, and the joins between entities. ${SQL_RULES}`,
        prompt: '{{steps.brief.output}}',
      },
    ],
  },
];
