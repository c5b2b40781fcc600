import { z } from '@hono/zod-openapi';

export const DATASET_FORMATS = ['jsonl', 'csv'] as const;

/** A job is created `pending`; the dataset builder moves it on. */
export const JOB_STATUSES = ['pending', 'running', 'succeeded', 'failed'] as const;

/** Most documents one dataset may draw on (the job and its manifest stay small). */
export const MAX_SOURCE_DOCUMENTS = 1000;

export const CreateDatasetRequest = z
  .strictObject({
    name: z.string().min(1).max(200).openapi({ description: 'the dataset name, 1–200 characters' }),
    source_documents: z
      .array(z.guid().openapi({ format: 'uuid' }))
      .max(MAX_SOURCE_DOCUMENTS)
      .default([])
      .openapi({
        description:
          'ids of existing documents to build the dataset from (your own; an admin may name any); at most 1000, default none',
      }),
    format: z
      .enum(DATASET_FORMATS)
      .default('jsonl')
      .openapi({ description: 'the dataset file format, default `jsonl`' }),
  })
  .openapi('FinetuneDatasetRequest');
export type CreateDatasetRequest = z.infer<typeof CreateDatasetRequest>;

export const FinetuneJob = z
  .object({
    id: z.uuid().openapi({ description: 'the job id (UUID), assigned at creation' }),
    name: z.string().openapi({ description: 'the dataset name' }),
    owner: z.string().openapi({ description: "the creator's name" }),
    status: z.enum(JOB_STATUSES).openapi({ description: 'the job status; a job is created `pending`' }),
    format: z.enum(DATASET_FORMATS).openapi({ description: 'the dataset file format' }),
    source_documents: z.array(z.string()).openapi({ description: 'ids of the documents the dataset is built from' }),
    created_at: z.iso.datetime().openapi({ description: 'when the job was created (ISO 8601 UTC)' }),
  })
  .openapi('FinetuneJob');
export type FinetuneJob = z.infer<typeof FinetuneJob>;

export const JobParams = z.object({
  job_id: z.string().min(1).max(64).openapi({ description: 'the job id returned at creation' }),
});

export const JobDeleted = z
  .object({
    id: z.string().openapi({ description: 'the id of the deleted job' }),
    deleted: z.literal(true).openapi({ description: 'always true' }),
  })
  .openapi('FinetuneJobDeleted');
export type JobDeleted = z.infer<typeof JobDeleted>;
