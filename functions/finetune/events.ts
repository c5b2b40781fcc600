import type { EventSource } from '../../shared/events/source.js';
import { datasetSubject, toFinetuneJob } from './store.js';

/** Every item is a job (`finetune/datasets/{id}`); data is the job as GET answers it. */
export const finetuneEvents: EventSource = {
  table: 'finetuneJobs',
  describe(item) {
    if (typeof item.id !== 'string') return undefined;
    return { subject: datasetSubject(item.id), data: toFinetuneJob(item) };
  },
};
