import {
  ConditionalCheckFailedException,
  DynamoDBClient,
  InternalServerError,
  ProvisionedThroughputExceededException,
  ResourceNotFoundException,
  ThrottlingException,
} from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

// Before the logger and the SDK load: the errors below are logged on purpose.
vi.hoisted(() => {
  process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
});

import { createDecisionsApp } from '../../functions/decisions/app.js';
import { DecisionService } from '../../functions/decisions/service.js';
import { DynamoDecisionStore } from '../../functions/decisions/store.js';
import type { RequestAuthenticator } from '../../shared/auth/authenticator.js';
import type { Caller } from '../../shared/auth/caller.js';
import { isDependencyFailure } from '../../shared/aws/errors.js';
import { Unauthenticated, Unavailable } from '../../shared/errors.js';
import { operationId } from '../../shared/http/openapi.js';
import { logger } from '../../shared/logger.js';
import { WWW_AUTHENTICATE } from '../support/tokens.js';

const ddb = DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'us-east-1' }));
const ddbMock = mockClient(DynamoDBDocumentClient);

const alice: Caller = {
  principal: '["https://issuer.test","sub-alice"]',
  name: 'alice',
  roles: new Set(['approver']),
  via: 'bearer',
};

function appWith(authenticate: () => Promise<Caller> = async () => alice) {
  const authenticator: RequestAuthenticator = { authenticate };
  return createDecisionsApp({
    authenticator,
    service: new DecisionService(new DynamoDecisionStore(ddb, 'test-decisions')),
  });
}

/** DynamoDB's ValidationException is not a modelled class: the SDK builds it from the response. */
const validationException = (message: string) =>
  Object.assign(new Error(message), {
    name: 'ValidationException',
    $fault: 'client',
    $metadata: { httpStatusCode: 400 },
  });

const sdkError = <T>(Ctor: new (opts: { message: string; $metadata: object }) => T, message: string): T =>
  new Ctor({ message, $metadata: { httpStatusCode: 400, requestId: 'AWS-REQ-1234' } });

/** Dependency failures, each with text that must never reach the client. */
const OUTAGES: [string, () => Error][] = [
  [
    'ThrottlingException',
    () =>
      sdkError(ThrottlingException, 'Rate of requests exceeds the allowed throughput (table arn:aws:dynamodb:secret)'),
  ],
  [
    'ProvisionedThroughputExceededException',
    () =>
      sdkError(
        ProvisionedThroughputExceededException,
        'The level of configured provisioned throughput for the table arn:aws:dynamodb:secret was exceeded',
      ),
  ],
  [
    'a network error',
    () => Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:8000 secret'), { code: 'ECONNREFUSED' }),
  ],
  [
    'ResourceNotFoundException',
    () => sdkError(ResourceNotFoundException, 'Requested resource not found: Table: secret-table not found'),
  ],
  ['InternalServerError', () => sdkError(InternalServerError, 'Internal server error secret')],
];

const LEAKS = /secret|arn:|ECONNREFUSED|10\.0\.0\.1|Exception|InternalServerError|AWS-REQ|\sat \S+:\d+/i;

async function call(app: ReturnType<typeof appWith>, path: string, init: RequestInit = {}) {
  const res = await app.request(path, init);
  const text = await res.text();
  return { res, text, body: JSON.parse(text) as unknown };
}

beforeEach(() => {
  ddbMock.reset();
});

afterEach(() => {
  vi.restoreAllMocks();
});

describe('a store outage answers 503, never 500', () => {
  it.each(OUTAGES)('%s while listing versions', async (_name, error) => {
    ddbMock.on(QueryCommand).rejects(error());
    const { res, text, body } = await call(appWith(), '/api/decisions/ws/k/versions');
    expect(res.status, text).toBe(503);
    expect(body).toEqual({ error: expect.any(String), code: 503 });
    expect(text).not.toMatch(LEAKS);
    expect(res.headers.get('x-request-id')).toMatch(/\S/);
    expect(ddbMock.commandCalls(QueryCommand)).toHaveLength(1);
  });

  it.each(OUTAGES)('%s while creating a version', async (_name, error) => {
    ddbMock.on(UpdateCommand).rejects(error());
    ddbMock.on(PutCommand).rejects(error());
    const { res, text, body } = await call(appWith(), '/api/decisions/ws/k/versions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ content: { a: 1 } }),
    });
    expect(res.status, text).toBe(503);
    expect(body).toEqual({ error: expect.any(String), code: 503 });
    expect(text).not.toMatch(LEAKS);
  });

  it.each(OUTAGES)('%s while approving (the conditional write)', async (_name, error) => {
    ddbMock.on(UpdateCommand).rejects(error());
    const { res, text, body } = await call(appWith(), '/api/decisions/ws/k/versions/1/approve', { method: 'POST' });
    expect(res.status, text).toBe(503);
    expect(body).toEqual({ error: expect.any(String), code: 503 });
    expect(text).not.toMatch(LEAKS);
    expect(ddbMock.commandCalls(UpdateCommand)).toHaveLength(1);
  });

  it('a failure while reading one version answers 503', async () => {
    ddbMock.on(GetCommand).rejects(sdkError(ThrottlingException, 'slow down'));
    const { res, body } = await call(appWith(), '/api/decisions/ws/k/versions/3');
    expect(res.status).toBe(503);
    expect(body).toEqual({ error: expect.any(String), code: 503 });
  });
});

describe('an unexpected error answers 500 without internals', () => {
  it('answers exactly {"error":"Internal Server Error","code":500}', async () => {
    ddbMock.on(QueryCommand).rejects(new Error('secret internals'));
    const { res, text, body } = await call(appWith(), '/api/decisions/ws/k/versions');
    expect(res.status).toBe(500);
    expect(body).toEqual({ error: 'Internal Server Error', code: 500 });
    expect(text).not.toContain('secret');
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  });

  it('logs the details with the request id instead', async () => {
    const logged = vi.spyOn(logger, 'error');
    const failure = new Error('secret internals');
    ddbMock.on(QueryCommand).rejects(failure);
    const { res } = await call(appWith(), '/api/decisions/ws/k/versions', {
      headers: { 'x-request-id': 'req-500-check' },
    });
    expect(res.status).toBe(500);
    expect(res.headers.get('x-request-id')).toBe('req-500-check');
    expect(logged).toHaveBeenCalledWith(expect.any(String), expect.objectContaining({ request_id: 'req-500-check' }));
    const [, attributes] = logged.mock.calls[0]!;
    expect(JSON.stringify(attributes, (_k, v: unknown) => (v instanceof Error ? v.message : v))).toContain(
      'secret internals',
    );
  });

  it('a client-side SDK error that is not an outage is not reported as 503', async () => {
    ddbMock.on(QueryCommand).rejects(validationException('secret expression error'));
    const { res, text } = await call(appWith(), '/api/decisions/ws/k/versions');
    expect(res.status).toBe(500);
    expect(text).not.toContain('secret');
  });
});

describe('authenticator failures', () => {
  it('an authenticator that throws Unavailable answers 503', async () => {
    const app = appWith(async () => {
      throw new Unavailable('Identity provider did not answer');
    });
    const { res, body } = await call(app, '/api/decisions/ws/k/versions', { headers: { authorization: 'Bearer x' } });
    expect(res.status).toBe(503);
    expect(body).toEqual({ error: expect.any(String), code: 503 });
    expect(ddbMock.calls()).toHaveLength(0);
  });

  it('an authenticator that throws Unauthenticated answers 401 with WWW-Authenticate', async () => {
    const app = appWith(async () => {
      throw new Unauthenticated();
    });
    const { res, body } = await call(app, '/api/decisions/ws/k/versions');
    expect(res.status).toBe(401);
    expect(body).toEqual({ error: expect.any(String), code: 401 });
    expect(res.headers.get('www-authenticate')).toBe(WWW_AUTHENTICATE);
    expect(ddbMock.calls()).toHaveLength(0);
  });

  it('a store failure behind a successful authentication still answers 503, not 401', async () => {
    ddbMock.on(QueryCommand).rejects(sdkError(ThrottlingException, 'slow down'));
    const { res } = await call(appWith(), '/api/decisions/ws/k/versions');
    expect(res.status).toBe(503);
  });
});

describe('isDependencyFailure', () => {
  it.each([
    ['ThrottlingException', sdkError(ThrottlingException, 'x')],
    ['ProvisionedThroughputExceededException', sdkError(ProvisionedThroughputExceededException, 'x')],
    ['ResourceNotFoundException', sdkError(ResourceNotFoundException, 'x')],
    ['InternalServerError ($fault server)', sdkError(InternalServerError, 'x')],
    ['a named throttling error', Object.assign(new Error('x'), { name: 'TooManyRequestsException' })],
    ['a TimeoutError', Object.assign(new Error('x'), { name: 'TimeoutError' })],
    ['ECONNREFUSED', Object.assign(new Error('x'), { code: 'ECONNREFUSED' })],
    ['ECONNRESET', Object.assign(new Error('x'), { code: 'ECONNRESET' })],
    ['ENOTFOUND', Object.assign(new Error('x'), { code: 'ENOTFOUND' })],
    ['ETIMEDOUT', Object.assign(new Error('x'), { code: 'ETIMEDOUT' })],
    ['a server fault', Object.assign(new Error('x'), { $fault: 'server' })],
    ['a retryable error', Object.assign(new Error('x'), { $retryable: { throttling: true } })],
    [
      'a network error as the cause',
      new TypeError('fetch failed', { cause: Object.assign(new Error('x'), { code: 'ECONNREFUSED' }) }),
    ],
    [
      'a network error inside an AggregateError',
      new AggregateError([new Error('a'), Object.assign(new Error('b'), { code: 'EHOSTUNREACH' })]),
    ],
  ])('true for %s', (_what, err) => {
    expect(isDependencyFailure(err)).toBe(true);
  });

  it.each([
    ['a plain Error', new Error('secret internals')],
    ['a TypeError', new TypeError('x is not a function')],
    ['ConditionalCheckFailedException', sdkError(ConditionalCheckFailedException, 'x')],
    ['ValidationException', validationException('x')],
    ['an unknown code', Object.assign(new Error('x'), { code: 'EACCES' })],
    ['a client fault', Object.assign(new Error('x'), { $fault: 'client' })],
    ['null', null],
    ['undefined', undefined],
    ['a string', 'ECONNREFUSED'],
    ['a number', 503],
  ])('false for %s', (_what, err) => {
    expect(isDependencyFailure(err)).toBe(false);
  });

  it('does not follow an endless cause chain', () => {
    const looping: { name: string; cause?: unknown } = { name: 'Error' };
    looping.cause = looping;
    expect(isDependencyFailure(looping)).toBe(false);
  });
});

describe('operationId (FastAPI style)', () => {
  it("gives E1's exact operationId", () => {
    expect(operationId('approve_version', '/api/decisions/{workspace}/{key}/versions/{version}/approve', 'post')).toBe(
      'approve_version_api_decisions__workspace___key__versions__version__approve_post',
    );
  });

  it('turns every non-word character of the path into _ and lowercases the method', () => {
    expect(operationId('ping', '/api/health/ping', 'GET')).toBe('ping_api_health_ping_get');
    expect(operationId('openapi', '/openapi.json', 'get')).toBe('openapi_openapi_json_get');
    expect(operationId('get_events', '/api/events/{correlation_id}', 'get')).toBe(
      'get_events_api_events__correlation_id__get',
    );
    expect(operationId('create_psk', '/api/dataproduct/{dataproduct_id}/psk', 'post')).toBe(
      'create_psk_api_dataproduct__dataproduct_id__psk_post',
    );
    expect(operationId('list_crew_templates', '/api/crew-templates', 'get')).toBe(
      'list_crew_templates_api_crew_templates_get',
    );
  });

  it('differs by method for the same path', () => {
    const path = '/api/mcps/{server_id}';
    expect(new Set(['get', 'put', 'delete'].map((m) => operationId('server', path, m))).size).toBe(3);
  });
});

describe('isUnstorableInput', () => {
  it('recognises the numbers DynamoDB cannot store, and nothing else', async () => {
    const { isUnstorableInput } = await import('../../shared/aws/errors.js');
    const refused = (message: string) => Object.assign(new Error(message), { name: 'ValidationException' });
    expect(
      isUnstorableInput(
        refused('Number underflow. Attempting to store a number with magnitude smaller than supported range'),
      ),
    ).toBe(true);
    expect(
      isUnstorableInput(
        refused('Number overflow. Attempting to store a number with magnitude larger than supported range'),
      ),
    ).toBe(true);
    expect(isUnstorableInput(refused('Item size has exceeded the maximum allowed size'))).toBe(true);
    expect(isUnstorableInput(refused('The provided key element does not match the schema'))).toBe(false);
    expect(isUnstorableInput(Object.assign(new Error('Number underflow'), { name: 'ThrottlingException' }))).toBe(
      false,
    );
  });
});
