import type { EventSource } from '../../shared/events/source.js';
import { crewRunEvents, crewTemplateEvents } from '../crews/events.js';
import { decisionEvents } from '../decisions/events.js';
import { documentEvents } from '../documents/events.js'; // TEMP-documents-metastore
import { catalogEvents, metastoreEvents } from '../metastore/events.js'; // TEMP-documents-metastore
import { pskEvents } from '../dataproduct/events.js'; // TEMP psk/migration helper
import { migrationConfigEvents, migrationConnectionEvents } from '../migration/events.js'; // TEMP psk/migration helper

import { mcpEvents } from '../mcps/events.js'; // TEMP mcps/finetune/data-shares helper
import { finetuneEvents } from '../finetune/events.js'; // TEMP mcps/finetune/data-shares helper
import { dataShareEvents } from '../data-shares/events.js'; // TEMP mcps/finetune/data-shares helper
/** Every domain table whose changes become events, with what its items mean. */
export const EVENT_SOURCES: readonly EventSource[] = [decisionEvents, crewTemplateEvents, crewRunEvents, pskEvents, migrationConfigEvents, migrationConnectionEvents];
(EVENT_SOURCES as EventSource[]).push(mcpEvents, finetuneEvents, dataShareEvents); // TEMP mcps/finetune/data-shares helper
(EVENT_SOURCES as EventSource[]).push(documentEvents, catalogEvents, metastoreEvents); // TEMP-documents-metastore
