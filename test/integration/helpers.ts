import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { expect } from 'vitest';
import { tokenPrincipal } from '../../shared/auth/caller.js';
import { KeyStore } from '../../shared/auth/key-store.js';
import { documentClient } from '../../shared/aws/clients.js';
import { randomSecret, sha256Hex } from '../../shared/crypto.js';
import { physicalTableName, TABLES } from '../../infra/tables.js';
import { appendRecord, type RecordInput } from '../support/exchange-log.js';
import { mintToken, type TokenOptions } from '../support/tokens.js';
import { provided } from './provided.js';

export const baseUrl = () => provided('baseUrl');

/**
 * The service log of the run (every platform's lines, in order), once everything logged
 * before this call is in it: the log is written off the request's path, so this makes a
 * request of its own with a fresh request id and reads until that request's line is there.
 */
export async function serviceLog(): Promise<string> {
  const marker = randomUUID();
  const res = await fetch(`${baseUrl()}/api/health/ping`, { headers: { 'x-request-id': marker } });
  await res.arrayBuffer();
  for (let waited = 0; ; waited += 20) {
    const log = readFileSync(provided('logFile'), 'utf8');
    if (log.includes(marker)) return log;
    if (waited >= 10_000) throw new Error(`the service log never showed request ${marker}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface CallOptions {
  method?: string;
  token?: string;
  psk?: string;
  body?: unknown;
  /** Sent as is, instead of JSON-encoding `body`. */
  rawBody?: string;
  headers?: Record<string, string>;
}

/** One HTTP call against the local platform. */
export async function api<T = any>(path: string, options: CallOptions = {}): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.psk) headers['authorization-psk'] = options.psk;
  let body: string | undefined = options.rawBody;
  if (body === undefined && options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined) headers['content-type'] ??= 'application/json';
  // A redirect is an answer of its own (GET /console → /console/): never followed.
  const res = await fetch(`${baseUrl()}${path}`, {
    method: options.method ?? 'GET',
    headers,
    body,
    redirect: 'manual',
  });
  const text = await res.text();
  record({
    type: 'exchange',
    method: options.method ?? 'GET',
    path,
    request: { body, ...sentCredentials(headers) },
    status: res.status,
    responseHeaders: Object.fromEntries(res.headers),
    responseText: text,
  });
  let parsed: unknown = undefined;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}

/** The credentials a call sent, however the test spelled the header names. */
function sentCredentials(headers: Record<string, string>): { psk?: string; token?: string } {
  const sent = new Headers(headers);
  const bearer = /^Bearer\s+(.+)$/i.exec(sent.get('authorization') ?? '')?.[1];
  return { psk: sent.get('authorization-psk') ?? undefined, token: bearer };
}

/** Where the current test stands, for the records of the secret hygiene check. */
function caller(): { file: string; test: string | undefined } {
  const state = expect.getState();
  return { file: state.testPath ? relative(process.cwd(), state.testPath) : '?', test: state.currentTestName };
}

/**
 * Every exchange (and every secret made outside the API) goes to the run's record, which
 * test/hygiene/secret-hygiene.test.ts checks for leaked secrets after the run.
 */
function record(line: RecordInput): void {
  appendRecord(provided('dataDir'), caller(), line);
}

/**
 * A webhook delivery a test's receiver got, recorded as what the service sent (no secret
 * may be in one: no disclosure matches a receiver's path) for the secret hygiene check.
 */
export function recordDelivery(hook: { path: string; headers: Record<string, unknown>; body: string }): void {
  record({
    type: 'exchange',
    method: 'DELIVERY',
    path: `(webhook receiver) ${hook.path}`,
    request: {},
    status: 200,
    responseHeaders: Object.fromEntries(Object.entries(hook.headers).map(([k, v]) => [k, String(v)])),
    responseText: hook.body,
  });
}

/** A Bearer token for `name` from the test issuer. */
export function token(name: string, options: TokenOptions = {}): Promise<string> {
  return mintToken(
    provided('privateJwk'),
    { issuer: provided('issuer'), audience: provided('audience') },
    name,
    options,
  );
}

// The callers most files need, in one place. A file names its own users: the name is what
// the service records (`created_by`, an event's `actor`), and tests compare it.

/** A Bearer token of the test issuer's user `name` with the role `admin`. */
export const adminToken = (name: string) => token(name, { roles: ['admin'] });

/** A Bearer token of the test issuer's user `name` with the role `approver`. */
export const approverToken = (name: string) => token(name, { roles: ['approver'] });

/** The suite platform's bootstrap admin key (DPM_ADMIN_PSK): role admin, no session, principal `dpm:bootstrap-admin`. */
export const adminPsk = () => provided('adminPsk');

/** The principal of the test issuer's user `name` (its tokens' subject is `sub-<name>`). */
export const principalOf = (name: string, subject = `sub-${name}`) => tokenPrincipal(provided('issuer'), subject);

/** A unique lowercase slug, so tests never share data. */
export const slug = (prefix = 't') => `${prefix}-${randomUUID().slice(0, 8)}`;

/** The local platform's DynamoDB, for tests that read or write its tables directly. */
export const db = () =>
  documentClient({
    region: 'us-east-1',
    endpoints: { dynamodb: provided('dynamodbEndpoint'), sqs: undefined, s3: undefined },
  });

/** A table's name on the test platform's stage. */
export const table = (key: keyof typeof TABLES) => physicalTableName(provided('stage'), TABLES[key]);

/** The suite's events table, for stores built by a test (their deletions record events). */
export const eventsTable = () => ({
  tableName: table('domainEvents'),
  ttlDays: 30,
  source: `dpm/${provided('stage')}`,
});

let keyStore: KeyStore | undefined;
function keys(): KeyStore {
  keyStore ??= new KeyStore(db(), table('keys'));
  return keyStore;
}

/**
 * Stores a pre-shared key directly in the keys table (the PSK endpoints are another
 * group's); returns the secret and the record's hash.
 */
export async function insertKey(options: {
  createdBy: string;
  /** The creator's principal; by default the test issuer's user named `createdBy`; null: none (a legacy key). */
  createdByPrincipal?: string | null;
  lineage?: string[];
  roles?: string[];
  validUntil?: string;
  deletedAt?: string;
}): Promise<{ secret: string; hash: string }> {
  const secret = `test_${randomSecret()}`;
  const hash = sha256Hex(secret);
  await keys().createIfAbsent({
    key_hash: hash,
    psk: randomUUID(),
    dataproduct_id: 'test-product',
    description: 'integration test key',
    roles: options.roles ?? [],
    created_by: options.createdBy,
    ...(options.createdByPrincipal !== null
      ? { created_by_principal: options.createdByPrincipal ?? principalOf(options.createdBy) }
      : {}),
    ...(options.lineage ? { lineage: options.lineage } : {}),
    created_at: new Date().toISOString(),
    valid_until_ms: options.validUntil ? Date.parse(options.validUntil) : Date.now() + 86_400_000,
    ...(options.deletedAt ? { deleted_at: options.deletedAt } : {}),
  });
  record({ type: 'secret', kind: 'psk-secret', value: secret, source: 'insertKey()' });
  return { secret, hash };
}

export async function deleteKey(hash: string): Promise<void> {
  await keys().markDeleted(hash, new Date().toISOString());
}
