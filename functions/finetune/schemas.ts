import * as z from 'zod/mini';
import { component, doc } from '../../shared/schema.js';

export const DATASET_FORMATS = ['jsonl', 'csv'] as const;

/** A job is created `pending`; the dataset builder moves it on. */
export const JOB_STATUSES = ['pending', 'running', 'succeeded', 'failed'] as const;

/** Most documents one dataset may draw on (the job and its manifest stay small). */
export const MAX_SOURCE_DOCUMENTS = 1000;

export const CreateDatasetRequest = component(
  'FinetuneDatasetRequest',
  z.strictObject({
    name: doc(z.string().check(z.minLength(1), z.maxLength(200)), 'the dataset name, 1–200 characters'),
    source_documents: doc(
      z._default(z.array(z.guid().check(z.meta({ format: 'uuid' }))).check(z.maxLength(MAX_SOURCE_DOCUMENTS)), []),
      'ids of existing documents to build the dataset from (your own; an admin may name any); at most 1000, default none',
    ),
    format: doc(z._default(z.enum(DATASET_FORMATS), 'jsonl'), 'the dataset file format, default `jsonl`'),
  }),
);
export type CreateDatasetRequest = z.infer<typeof CreateDatasetRequest>;

export const FinetuneJob = component(
  'FinetuneJob',
  z.object({
    id: doc(z.uuid(), 'the job id (UUID), assigned at creation'),
    name: doc(z.string(), 'the dataset name'),
    owner: doc(z.string(), "the creator's name"),
    status: doc(z.enum(JOB_STATUSES), 'the job status; a job is created `pending`'),
    format: doc(z.enum(DATASET_FORMATS), 'the dataset file format'),
    source_documents: doc(z.array(z.string()), 'ids of the documents the dataset is built from'),
    created_at: doc(z.iso.datetime(), 'when the job was created (ISO 8601 UTC)'),
  }),
);
export type FinetuneJob = z.infer<typeof FinetuneJob>;

export const JobParams = z.object({
  job_id: doc(z.string().check(z.minLength(1), z.maxLength(64)), 'the job id returned at creation'),
});

export const JobDeleted = component(
  'FinetuneJobDeleted',
  z.object({
    id: doc(z.string(), 'the id of the deleted job'),
    deleted: doc(z.literal(true), 'always true'),
  }),
);
export type JobDeleted = z.infer<typeof JobDeleted>;
