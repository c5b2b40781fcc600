import { describe, expect, it } from 'vitest';
import { type ColdStartTargets, lambdaEnvironment } from '../bench/cold-start.js';
import { functionIn, groups, withStubHandlers } from './support.js';

/**
 * The benchmark's cold starts (test/bench/cold-start.ts) run each HTTP group's bundle with the
 * environment its Lambda has on AWS: the variables infra/aws/lambdas.ts gives it, besides the
 * Lambda runtime's own and the emulators' endpoints. A variable the stack adds or drops and the
 * bench does not follow fails here, before it skews a cold start.
 */
const { synthesize } = withStubHandlers();

/** What the Lambda runtime sets, and the emulators' endpoints: in every child, in no template. */
const RUNTIME_AND_EMULATORS = [
  'AWS_REGION',
  'AWS_DEFAULT_REGION',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_LAMBDA_FUNCTION_NAME',
  'AWS_LAMBDA_FUNCTION_MEMORY_SIZE',
  'AWS_LAMBDA_FUNCTION_VERSION',
  'AWS_EXECUTION_ENV',
  'AWS_LAMBDA_LOG_FORMAT',
  'TZ',
  'DYNAMODB_ENDPOINT',
  'SQS_ENDPOINT',
  'S3_ENDPOINT',
  'AWS_ENDPOINT_URL_KMS',
  'AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED',
];

const targets: ColdStartTargets = {
  baseUrl: 'http://127.0.0.1:1',
  stage: 'dev',
  region: 'us-east-1',
  issuer: 'https://id.example.com',
  audience: 'dpm-api',
  token: async () => 'token',
  tableName: (table) => `dpm-dev-${table}`,
  queueUrls: { crewRuns: 'q1', webhookDeliveries: 'q2', runWebhookDeliveries: 'q3' },
  artifactsBucket: 'bucket',
  endpoints: { dynamodb: 'd', sqs: 's', s3: 's', kms: 'k' },
  kmsKeyArn: 'arn:aws:kms:us-east-1:123456789012:key/k',
  receiverUrl: 'http://127.0.0.1:1/hook',
  queue: async () => 'q',
};

describe("the cold starts' Lambda environment", () => {
  it('names, for every HTTP group, exactly the variables of its function in the synthesized stack', () => {
    // The bench's stage: an issuer for Bearer tokens, webhooks to loopback; no secrets (no request here reads one).
    const { stateless } = synthesize('dev', {
      stage: { authIssuer: 'https://id.example.com', authAudience: 'dpm-api', webhookAllowedHosts: ['127.0.0.1'] },
    });
    for (const group of groups) {
      const synthesized = Object.keys(functionIn(stateless, 'dev', group.name)[1].Properties.Environment.Variables);
      const bench = Object.keys(lambdaEnvironment(group, targets)).filter((v) => !RUNTIME_AND_EMULATORS.includes(v));
      expect(bench.sort(), group.name).toEqual(synthesized.sort());
    }
  });
});
