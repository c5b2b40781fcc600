import { z } from '@hono/zod-openapi';

export const DATASET_FORMATS = ['jsonl', 'csv'] as const;

/** A job is created `pending`; the dataset builder moves it on. */
export const JOB_STATUSES = ['pending', 'running', 'succeeded', 'failed'] as const;

/** Most documents one dataset may draw on (the job and its manifest stay small). */
export const MAX_SOURCE_DOCUMENTS = 1000;

export const CreateDatasetRequest = z
  .strictObject({
    name: z.string().min(1).max(200),
    source_documents: z
      .array(z.guid().openapi({ format: 'uuid' }))
      .max(MAX_SOURCE_DOCUMENTS)
      .default([])
      .openapi({ description: 'ids of documents to build the dataset from' }),
    format: z.enum(DATASET_FORMATS).default('jsonl'),
  })
  .openapi('FinetuneDatasetRequest');
export type CreateDatasetRequest = z.infer<typeof CreateDatasetRequest>;

export const FinetuneJob = z
  .object({
    id: z.uuid(),
    name: z.string(),
    owner: z.string(),
    status: z.enum(JOB_STATUSES),
    format: z.enum(DATASET_FORMATS),
    source_documents: z.array(z.string()),
    created_at: z.iso.datetime(),
  })
  .openapi('FinetuneJob');
export type FinetuneJob = z.infer<typeof FinetuneJob>;

export const JobParams = z.object({ job_id: z.string().min(1).max(64) });

export const JobDeleted = z.object({ id: z.string(), deleted: z.literal(true) }).openapi('FinetuneJobDeleted');
export type JobDeleted = z.infer<typeof JobDeleted>;
