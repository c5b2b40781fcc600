import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { physicalTableName, TABLES, type TableKey } from '../infra/tables.js';
import { Authenticator } from './auth/authenticator.js';
import { JwtVerifier } from './auth/jwt.js';
import { KeyStore } from './auth/key-store.js';
import { PskVerifier } from './auth/psk.js';
import { documentClient } from './aws/clients.js';
import { type Config, loadConfig } from './config.js';

/** What every group's composition root needs: config, the DynamoDB client, authentication. */
export interface Runtime {
  readonly config: Config;
  readonly db: DynamoDBDocumentClient;
  readonly keys: KeyStore;
  readonly psk: PskVerifier;
  readonly authenticator: Authenticator;
  tableName(table: TableKey): string;
}

export function createRuntime(config: Config, db: DynamoDBDocumentClient = documentClient(config)): Runtime {
  const tableName = (table: TableKey) => physicalTableName(config.stage, TABLES[table]);
  const keys = new KeyStore(db, tableName('keys'));
  const adminPskArn = config.adminPskArn;
  const psk = new PskVerifier(
    keys,
    config.adminPsk ??
      (adminPskArn
        ? () => import('./aws/secrets-manager.js').then((m) => m.secretValue(config.region, adminPskArn))
        : undefined),
  );
  return {
    config,
    db,
    keys,
    psk,
    authenticator: new Authenticator(new JwtVerifier(config.auth), psk),
    tableName,
  };
}

let lambdaRuntime: Runtime | undefined;

/** The Lambda's runtime, built once per container from the environment. */
export function lambdaRuntimeFromEnv(): Runtime {
  lambdaRuntime ??= createRuntime(loadConfig());
  return lambdaRuntime;
}
