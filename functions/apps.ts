import { GROUPS, type GroupName } from '../infra/groups.js';
import pkg from '../package.json' with { type: 'json' };
import type { ServiceApp } from '../shared/http/app.js';
import { mergeDocuments } from '../shared/http/openapi.js';
import type { Runtime } from '../shared/runtime.js';
import { oauthEndpointsOf } from '../shared/auth/discovery.js';
import { crewsApp } from './crews/app.js';
import { dataSharesApp } from './data-shares/app.js';
import { dataproductApp } from './dataproduct/app.js';
import { decisionsApp } from './decisions/app.js';
import { documentsApp } from './documents/app.js';
import { finetuneApp } from './finetune/app.js';
import { mcpsApp } from './mcps/app.js';
import { metastoreApp } from './metastore/app.js';
import { migrationApp } from './migration/app.js';
import { createPlatformApp } from './platform/app.js';
import { queryApp } from './query/app.js';

export const API_INFO = {
  title: 'Data Platform Management Service',
  version: pkg.version,
  description:
    'Manages a data platform and runs automated data tasks. Authenticate with `Authorization: Bearer <JWT>` or `Authorization-PSK: <key>`.',
};

/** Every group's app, built on one runtime: what the local platform serves. */
export function serviceApps(runtime: Runtime): Record<GroupName, ServiceApp> {
  const apps = {} as Record<GroupName, ServiceApp>;
  let document: unknown;
  const documentOfAll = () => (document ??= openApiDocument(Object.values(apps)));
  const factories: Record<GroupName, () => ServiceApp> = {
    platform: () =>
      createPlatformApp({
        version: pkg.version,
        buildNumber: runtime.config.buildNumber,
        document: documentOfAll,
        oauthEndpoints: oauthEndpointsOf(runtime.config.auth.issuer),
        docsClientId: runtime.config.auth.docsClientId,
      }),
    decisions: () => decisionsApp(runtime),
    crews: () => crewsApp(runtime),
    dataproduct: () => dataproductApp(runtime),
    'data-shares': () => dataSharesApp(runtime),
    mcps: () => mcpsApp(runtime),
    finetune: () => finetuneApp(runtime),
    migration: () => migrationApp(runtime),
    metastore: () => metastoreApp(runtime),
    documents: () => documentsApp(runtime),
    query: () => queryApp(runtime),
  };
  for (const group of GROUPS) apps[group.name] = factories[group.name]();
  return apps;
}

export function openApiDocument(apps: readonly ServiceApp[]) {
  return mergeDocuments(
    API_INFO,
    apps.map((app) => app.getOpenAPI31Document({ openapi: '3.1.0', info: API_INFO })),
  );
}
