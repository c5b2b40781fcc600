import type { EventSource } from '../../shared/events/source.js';
import { crewRunEvents, crewScheduleEvents, crewTemplateEvents } from '../crews/events.js';
import { dataShareEvents } from '../data-shares/events.js';
import { dataProductEvents, pskEvents } from '../dataproduct/events.js';
import { decisionEvents } from '../decisions/events.js';
import { documentEvents } from '../documents/events.js';
import { finetuneEvents } from '../finetune/events.js';
import { mcpEvents } from '../mcps/events.js';
import { catalogEvents } from '../metastore/events.js';
import { migrationConfigEvents, migrationConnectionEvents } from '../migration/events.js';
import { webhookEvents } from '../webhooks/events.js';

/** Every domain table whose changes become events, with what its items mean. */
export const EVENT_SOURCES: readonly EventSource[] = [
  decisionEvents,
  crewTemplateEvents,
  crewRunEvents,
  crewScheduleEvents,
  pskEvents,
  dataProductEvents,
  dataShareEvents,
  mcpEvents,
  finetuneEvents,
  migrationConfigEvents,
  migrationConnectionEvents,
  catalogEvents,
  documentEvents,
  webhookEvents,
];
