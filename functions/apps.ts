import { GROUPS, type GroupName } from '../infra/groups.js';
import pkg from '../package.json' with { type: 'json' };
import type { ServiceApp } from '../shared/http/service-app.js';
import { documentOf } from '../shared/http/openapi.js';
import type { Runtime } from './composition.js';
import { createApprovalsApp } from './approvals/app.js';
import { approvalsDeps } from './approvals/compose.js';
import { createCrewsApp } from './crews/app.js';
import { crewsDeps } from './crews/compose-api.js';
import { createDataSharesApp } from './data-shares/app.js';
import { dataSharesDeps } from './data-shares/compose.js';
import { createDataproductApp } from './dataproduct/app.js';
import { dataproductDeps } from './dataproduct/compose.js';
import { createDecisionsApp } from './decisions/app.js';
import { decisionsDeps } from './decisions/compose.js';
import { createDocumentsApp } from './documents/app.js';
import { documentsDeps } from './documents/compose.js';
import { createDomainEventsApp } from './domain-events/app.js';
import { domainEventsDeps } from './domain-events/compose.js';
import { createFinetuneApp } from './finetune/app.js';
import { finetuneDeps } from './finetune/compose.js';
import { createMcpsApp } from './mcps/app.js';
import { mcpsDeps } from './mcps/compose.js';
import { createMetastoreApp } from './metastore/app.js';
import { metastoreDeps } from './metastore/compose.js';
import { createMigrationApp } from './migration/app.js';
import { migrationDeps } from './migration/compose.js';
import { createPlatformApp } from './platform/app.js';
import { platformDeps } from './platform/compose.js';
import { createQueryApp } from './query/app.js';
import { queryDeps } from './query/compose.js';
import { createWebhooksApp } from './webhooks/app.js';
import { webhooksDeps } from './webhooks/compose-api.js';

const API_INFO = {
  title: 'Data Platform Management Service',
  version: pkg.version,
  description:
    'Manages a data platform and runs automated data tasks. Authenticate with `Authorization: Bearer <JWT>` or `Authorization-PSK: <key>`.',
};

/** Every group's app, composed by the same builders as the Lambdas on one runtime: what the local platform serves. */
export function serviceApps(runtime: Runtime): Record<GroupName, ServiceApp> {
  const apps = {} as Record<GroupName, ServiceApp>;
  let document: unknown;
  const documentOfAll = () => (document ??= openApiDocument(Object.values(apps)));
  const factories: Record<GroupName, () => ServiceApp> = {
    platform: () => createPlatformApp(platformDeps(runtime.config, documentOfAll)),
    decisions: () => createDecisionsApp(decisionsDeps(runtime)),
    crews: () => createCrewsApp(crewsDeps(runtime)),
    dataproduct: () => createDataproductApp(dataproductDeps(runtime)),
    'data-shares': () => createDataSharesApp(dataSharesDeps(runtime)),
    mcps: () => createMcpsApp(mcpsDeps(runtime)),
    finetune: () => createFinetuneApp(finetuneDeps(runtime)),
    migration: () => createMigrationApp(migrationDeps(runtime)),
    metastore: () => createMetastoreApp(metastoreDeps(runtime)),
    documents: () => createDocumentsApp(documentsDeps(runtime)),
    'domain-events': () => createDomainEventsApp(domainEventsDeps(runtime)),
    query: () => createQueryApp(queryDeps(runtime)),
    webhooks: () => createWebhooksApp(webhooksDeps(runtime)),
    approvals: () => createApprovalsApp(approvalsDeps(runtime)),
  };
  for (const group of GROUPS) apps[group.name] = factories[group.name]();
  return apps;
}

export function openApiDocument(apps: readonly ServiceApp[]) {
  return documentOf(API_INFO, apps);
}
