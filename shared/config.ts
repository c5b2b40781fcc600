import { BlockList, isIP } from 'node:net';
import * as z from 'zod/mini';
import { originList } from './cors.js';
import type { ModelProvider } from './ports/llm.js';

/**
 * The service's configuration, parsed once from the environment. Nothing else in the
 * code base reads `process.env`: everything receives a `Config`.
 */
/** Trimmed text; blank counts as unset. */
const optionalText = z.optional(
  z.pipe(
    z.string().check(z.trim()),
    z.transform((v: string) => (v === '' ? undefined : v)),
  ),
);

const optionalUrl = z.pipe(optionalText, z.optional(z.url({ error: 'must be an http(s) URL' })));

const adapter = <T extends readonly [string, ...string[]]>(values: T) =>
  z._default(z.enum(values, { error: `must be one of ${values.join(', ')}` }), values[0] as T[0]);

const nonEmpty = () => z.string().check(z.minLength(1, { error: 'must not be empty' }));

const wholeNumber = (error: string, min: number, max: number) =>
  z.pipe(z.coerce.number({ error }), z.int().check(z.gte(min), z.lte(max)));

export const EnvSchema = z.object({
  STAGE: z._default(
    z
      .string()
      .check(
        z.regex(/^[a-z][a-z0-9-]{0,23}$/, { error: 'must be a lowercase slug (a-z, 0-9, -), at most 24 characters' }),
      ),
    'local',
  ),
  AWS_REGION: z._default(nonEmpty(), 'us-east-1'),
  PORT: z._default(wholeNumber('must be a port number', 0, 65535), 3000),
  HTTPS_PORT: optionalText,
  HOST: z._default(nonEmpty(), '127.0.0.1'),
  DPM_DATA_DIR: z._default(nonEmpty(), '.data'),
  DPM_ADMIN_PSK: z.pipe(
    optionalText,
    z.optional(z.string().check(z.minLength(16, { error: 'must be at least 16 characters' }))),
  ),
  DPM_ADMIN_PSK_ARN: optionalText,
  AUTH_ISSUER: optionalUrl,
  AUTH_AUDIENCE: optionalText,
  AUTH_JWKS_URL: optionalUrl,
  AUTH_DOCS_CLIENT_ID: z._default(
    z.string().check(z.trim(), z.minLength(1, { error: 'must not be empty' })),
    'dpm-docs',
  ),
  AUTH_CONSOLE_CLIENT_ID: z._default(
    z.string().check(z.trim(), z.minLength(1, { error: 'must not be empty' })),
    'dpm-console',
  ),
  DYNAMODB_ENDPOINT: optionalUrl,
  SQS_ENDPOINT: optionalUrl,
  S3_ENDPOINT: optionalUrl,
  CREW_RUN_QUEUE_URL: optionalUrl,
  WEBHOOK_QUEUE_URL: optionalUrl,
  RUN_WEBHOOK_QUEUE_URL: optionalUrl,
  ARTIFACTS_BUCKET: optionalText,
  KMS_KEY_ID: optionalText,
  TRINO_URL: optionalUrl,
  TRINO_USER: optionalText,
  DATAHUB_GMS_URL: optionalUrl,
  DATAHUB_TOKEN: optionalText,
  AIRFLOW_BASE_URL: optionalUrl,
  AIRFLOW_USERNAME: optionalText,
  AIRFLOW_PASSWORD: optionalText,
  AIRFLOW_PASSWORD_ARN: optionalText,
  KEYCLOAK_URL: optionalUrl,
  KEYCLOAK_REALM: optionalText,
  KEYCLOAK_ADMIN_CLIENT_ID: optionalText,
  KEYCLOAK_ADMIN_CLIENT_SECRET: optionalText,
  KEYCLOAK_ADMIN_CLIENT_SECRET_ARN: optionalText,
  EVENT_BUS_NAME: optionalText,
  SCHEDULE_GROUP_NAME: optionalText,
  SCHEDULER_ROLE_ARN: optionalText,
  CREW_RUN_QUEUE_ARN: optionalText,
  EVENTS_TTL_DAYS: z._default(wholeNumber('must be a number of days', 1, 3650), 30),
  METASTORE: adapter(['builtin', 'trino'] as const),
  CATALOG: adapter(['builtin', 'datahub'] as const),
  IDP: adapter(['builtin', 'keycloak'] as const),
  WORKFLOW: adapter(['builtin', 'airflow'] as const),
  LLM_PROVIDER: z.optional(
    z.enum(['openai', 'bedrock', 'local'] as const, { error: 'must be one of openai, bedrock, local' }),
  ),
  LLM_BASE_URL: optionalUrl,
  LLM_MODEL: optionalText,
  LLM_TIMEOUT_SECONDS: z._default(wholeNumber('must be a whole number of seconds from 1 to 900', 1, 900), 60),
  /** Set by Lambda: the process runs on AWS, where the local stand-in model is refused. */
  AWS_LAMBDA_FUNCTION_NAME: optionalText,
  LLM_API_KEY: optionalText,
  LLM_API_KEY_ARN: optionalText,
  CREW_HTTP_ALLOWED_HOSTS: optionalText,
  WEBHOOK_ALLOWED_HOSTS: optionalText,
  CORS_ORIGINS: optionalText,
  WEBHOOK_RETRY_SCHEDULE: z.pipe(
    optionalText,
    z.optional(
      z.string().check(
        z.regex(/^\d{1,6}(\s*,\s*\d{1,6}){0,19}$/, {
          error: 'must be 1 to 20 whole numbers of seconds, comma-separated (e.g. 5,300,1800)',
        }),
      ),
    ),
  ),
  BUILD_NUMBER: z._default(nonEmpty(), 'local'),
  DPM_LOCAL_USERS: z._default(z.string(), 'alice:approver,bob:approver,carol:,dana:admin'),
});

export type Env = z.input<typeof EnvSchema>;

/** A user of the local identity provider: signs in with this name, gets these roles. */
export interface LocalUser {
  readonly name: string;
  readonly roles: readonly string[];
}

/** A local user's name, which is their subject: never a `:`, so never a client's (`client:<id>`). */
const LOCAL_NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;
const ROLE = /^[A-Za-z][A-Za-z0-9_:.-]{0,63}$/;

/**
 * DPM_LOCAL_USERS: `name:role,role;name:;...` (entries split by `;`, roles by `,`), or,
 * without any `;`, `name:role,name:role,...` (one role an entry, `+` joining more:
 * `dana:admin+approver`), as in the default `alice:approver,bob:approver,carol:,dana:admin`.
 */
function parseLocalUsers(text: string): LocalUser[] {
  const fail = (why: string) => {
    throw new ConfigError(`invalid configuration: DPM_LOCAL_USERS ${why}`);
  };
  const entries = text.includes(';') ? text.split(';') : text.split(',');
  const users = new Map<string, LocalUser>();
  for (const raw of entries.map((e) => e.trim()).filter((e) => e !== '')) {
    const colon = raw.indexOf(':');
    const name = (colon < 0 ? raw : raw.slice(0, colon)).trim();
    const roleText = colon < 0 ? '' : raw.slice(colon + 1);
    const roles = roleText
      .split(text.includes(';') ? /[,+]/ : /\+/)
      .map((r) => r.trim())
      .filter((r) => r !== '');
    if (!LOCAL_NAME.test(name)) fail(`has an invalid user name '${name}' (letters, digits, . _ @ -; at most 64)`);
    for (const role of roles) if (!ROLE.test(role)) fail(`has an invalid role '${role}' for user '${name}'`);
    if (users.has(name)) fail(`names user '${name}' twice`);
    users.set(name, { name, roles: [...new Set(roles)] });
  }
  if (users.size === 0) fail('names no user (format: name:role,role;name:role)');
  return [...users.values()];
}

export interface Config {
  readonly stage: string;
  readonly region: string;
  readonly port: number;
  /** The local platform's TLS port (docs/sdk.md): HTTPS_PORT, by default PORT + 443 (0, any free port, when PORT is 0). */
  readonly httpsPort: number;
  readonly host: string;
  readonly dataDir: string;
  readonly adminPsk: string | undefined;
  /** On AWS: the Secrets Manager ARN holding the bootstrap admin key (instead of DPM_ADMIN_PSK). */
  readonly adminPskArn: string | undefined;
  /** Users of the local identity provider (`npm start` without AUTH_ISSUER). */
  readonly localUsers: readonly LocalUser[];
  readonly auth: {
    readonly issuer: string | undefined;
    readonly audience: string | undefined;
    readonly jwksUrl: string | undefined;
    /** The issuer's public client that /docs signs in with (authorization code + PKCE). */
    readonly docsClientId: string;
    /** The issuer's public client that the review console (/console) signs in with (authorization code + PKCE). */
    readonly consoleClientId: string;
  };
  readonly endpoints: {
    readonly dynamodb: string | undefined;
    readonly sqs: string | undefined;
    readonly s3: string | undefined;
  };
  readonly crewRunQueueUrl: string | undefined;
  /** The API endpoints' webhook delivery queue (docs/events-and-webhooks.md): the dispatcher, the API's test and redeliver, and the worker send to it. */
  readonly webhookQueueUrl: string | undefined;
  /** The per-run webhooks' delivery queue (their own lane, the fair-use limits). */
  readonly runWebhookQueueUrl: string | undefined;
  readonly artifactsBucket: string | undefined;
  /** Wraps the data keys of encrypted secrets on AWS; locally a key file under dataDir does. */
  readonly kmsKeyId: string | undefined;
  readonly keycloak:
    | {
        readonly url: string;
        readonly realm: string;
        readonly clientId: string;
        /** The admin client's secret itself (local), or the Secrets Manager ARN holding it (AWS). */
        readonly clientSecret: { readonly value: string } | { readonly arn: string };
      }
    | undefined;
  /** Set when METASTORE=trino. */
  readonly trino: { readonly url: string; readonly user: string } | undefined;
  /** Set when CATALOG=datahub. */
  readonly datahub: { readonly gmsUrl: string; readonly token: string } | undefined;
  /** Set when WORKFLOW=airflow. */
  readonly airflow:
    | {
        readonly baseUrl: string;
        readonly username: string;
        /** The password itself (local), or the Secrets Manager ARN holding it (AWS). */
        readonly password: { readonly value: string } | { readonly arn: string };
      }
    | undefined;
  readonly eventsTtlDays: number;
  /** The stage's EventBridge bus (AWS); unset locally, where events go to the feed and webhooks only. */
  readonly eventBusName: string | undefined;
  /**
   * The stage's EventBridge Scheduler group (AWS): crew schedules are Scheduler schedules in it;
   * unset locally, where the platform fires them itself. With it, the two below are required.
   */
  readonly scheduleGroupName: string | undefined;
  /** The role Scheduler assumes to send a schedule's fires to the crew-run queue (AWS). */
  readonly schedulerRoleArn: string | undefined;
  /** The crew-run queue's ARN: the Scheduler schedules' target (AWS). */
  readonly crewRunQueueArn: string | undefined;
  readonly adapters: {
    readonly metastore: 'builtin' | 'trino';
    readonly catalog: 'builtin' | 'datahub';
    readonly idp: 'builtin' | 'keycloak';
    readonly workflow: 'builtin' | 'airflow';
  };
  readonly llm: {
    /**
     * Who answers `llm` steps, `ask` and suggestions: undefined when no model is configured.
     * `local` is the platform's stand-in (npm start's default), never on AWS.
     */
    readonly provider: ModelProvider | undefined;
    /** OpenAI-compatible base URL (openai, local); Bedrock Runtime's endpoint instead of the region's (bedrock). */
    readonly baseUrl: string | undefined;
    readonly model: string | undefined;
    readonly apiKey: string | undefined;
    /** On AWS: the Secrets Manager ARN holding the key (instead of LLM_API_KEY). */
    readonly apiKeyArn: string | undefined;
    /** Bound of one model call (LLM_TIMEOUT_SECONDS), throttling retries included. */
    readonly timeoutMs: number;
  };
  readonly crewHttpAllowedHosts: readonly string[];
  /** Hosts webhooks may reach over plain http (https reaches any host the address guard allows). */
  readonly webhookAllowedHosts: readonly string[];
  /** Browser origins allowed to call the API (the local platform's CORS; API Gateway's on AWS). */
  readonly corsOrigins: readonly string[];
  /** Seconds before each retry of a failed webhook delivery; after the last one it has failed. */
  readonly webhookRetrySchedule: readonly number[];
  readonly buildNumber: string;
}

/** docs/events-and-webhooks.md: retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
export const DEFAULT_WEBHOOK_RETRY_SCHEDULE: readonly number[] = [5, 300, 1800, 7200, 18_000, 36_000, 36_000];

/** `A.example, ,b` → `['a.example', 'b']` */
const hostList = (text: string | undefined): string[] =>
  (text ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter((h) => h !== '');

function corsOrigins(text: string | undefined): string[] {
  const { origins, bad } = originList(text);
  if (bad !== undefined)
    throw new ConfigError(
      `invalid configuration: CORS_ORIGINS '${bad}' is not an origin (scheme://host[:port], e.g. https://portal.example.com)`,
    );
  return origins;
}

/** HTTPS_PORT (blank is unset), else PORT + 443 (3443 for 3000); a free port when PORT is one. */
function httpsPort(port: number, text: string | undefined): number {
  if (text !== undefined) {
    const configured = Number(text);
    if (!/^\d+$/.test(text) || configured > 65535)
      throw new ConfigError('invalid configuration: HTTPS_PORT must be a port number');
    if (configured !== 0 && configured === port)
      throw new ConfigError('invalid configuration: HTTPS_PORT must differ from PORT');
    return configured;
  }
  if (port === 0) return 0;
  if (port + 443 > 65535)
    throw new ConfigError(
      'invalid configuration: HTTPS_PORT is required when PORT is above 65092 (PORT + 443 is no port)',
    );
  return port + 443;
}

/** Bad configuration: the message is one line naming the variable. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** The loopback addresses: 127.0.0.0/8 and ::1 (in any spelling, IPv4-mapped ones too). */
const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** A host that only this machine reaches: the name `localhost`, or a loopback IP address. */
export function isLoopbackHost(host: string): boolean {
  if (host.toLowerCase() === 'localhost') return true;
  const family = isIP(host);
  return family !== 0 && LOOPBACK.check(host, family === 6 ? 'ipv6' : 'ipv4');
}

/**
 * The local identity provider (`npm start` without AUTH_ISSUER) signs anyone in by name, with
 * no password, admins included (docs/identity-and-keys.md): it serves loopback only. A HOST that other
 * machines reach (0.0.0.0, ::, a LAN address, a host name) needs a real issuer. Checked when
 * the configuration is read, so the start stops before anything listens.
 */
export function checkLocalSignIn(host: string, issuer: string | undefined): void {
  if (issuer === undefined && !isLoopbackHost(host))
    throw new ConfigError(
      `invalid configuration: HOST ${host} is not a loopback address, and the local sign-in (no AUTH_ISSUER) lets anyone who reaches it in as any user, admins too, with no password: set AUTH_ISSUER (and AUTH_AUDIENCE) to serve beyond this machine, or use HOST=127.0.0.1`,
    );
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(`invalid configuration: ${String(issue.path[0])} ${issue.message}`);
  }
  const e = parsed.data;
  const required = (names: readonly (keyof typeof e)[], when: string) => {
    const missing = names.find((name) => !e[name]);
    if (missing) throw new ConfigError(`invalid configuration: ${String(missing)} is required when ${when}`);
  };
  let keycloak: Config['keycloak'];
  if (e.IDP === 'keycloak') {
    required(['KEYCLOAK_URL', 'KEYCLOAK_REALM', 'KEYCLOAK_ADMIN_CLIENT_ID'], 'IDP=keycloak');
    const secret = e.KEYCLOAK_ADMIN_CLIENT_SECRET;
    const secretArn = e.KEYCLOAK_ADMIN_CLIENT_SECRET_ARN;
    if (!secret && !secretArn) {
      throw new ConfigError(
        'invalid configuration: KEYCLOAK_ADMIN_CLIENT_SECRET (or KEYCLOAK_ADMIN_CLIENT_SECRET_ARN) is required when IDP=keycloak',
      );
    }
    keycloak = {
      url: e.KEYCLOAK_URL!,
      realm: e.KEYCLOAK_REALM!,
      clientId: e.KEYCLOAK_ADMIN_CLIENT_ID!,
      clientSecret: secret ? { value: secret } : { arn: secretArn! },
    };
  }
  if (e.SCHEDULE_GROUP_NAME) required(['SCHEDULER_ROLE_ARN', 'CREW_RUN_QUEUE_ARN'], 'SCHEDULE_GROUP_NAME is set');
  if (e.AUTH_ISSUER && !e.AUTH_AUDIENCE) {
    // Without an audience, tokens issued to any client of the issuer would pass.
    throw new ConfigError('invalid configuration: AUTH_AUDIENCE is required when AUTH_ISSUER is set');
  }
  let trino: Config['trino'];
  if (e.METASTORE === 'trino') {
    required(['TRINO_URL', 'TRINO_USER'], 'METASTORE=trino');
    trino = { url: e.TRINO_URL!, user: e.TRINO_USER! };
  }
  let datahub: Config['datahub'];
  if (e.CATALOG === 'datahub') {
    required(['DATAHUB_GMS_URL', 'DATAHUB_TOKEN'], 'CATALOG=datahub');
    datahub = { gmsUrl: e.DATAHUB_GMS_URL!, token: e.DATAHUB_TOKEN! };
  }
  let airflow: Config['airflow'];
  if (e.WORKFLOW === 'airflow') {
    required(['AIRFLOW_BASE_URL', 'AIRFLOW_USERNAME'], 'WORKFLOW=airflow');
    if (!e.AIRFLOW_PASSWORD && !e.AIRFLOW_PASSWORD_ARN) {
      throw new ConfigError(
        'invalid configuration: AIRFLOW_PASSWORD (or AIRFLOW_PASSWORD_ARN) is required when WORKFLOW=airflow',
      );
    }
    airflow = {
      baseUrl: e.AIRFLOW_BASE_URL!,
      username: e.AIRFLOW_USERNAME!,
      password: e.AIRFLOW_PASSWORD ? { value: e.AIRFLOW_PASSWORD } : { arn: e.AIRFLOW_PASSWORD_ARN! },
    };
  }
  checkLocalSignIn(e.HOST, e.AUTH_ISSUER);
  const llmProvider = modelProvider(e);
  return {
    stage: e.STAGE,
    region: e.AWS_REGION,
    port: e.PORT,
    httpsPort: httpsPort(e.PORT, e.HTTPS_PORT),
    host: e.HOST,
    dataDir: e.DPM_DATA_DIR,
    adminPsk: e.DPM_ADMIN_PSK,
    adminPskArn: e.DPM_ADMIN_PSK_ARN,
    localUsers: parseLocalUsers(e.DPM_LOCAL_USERS),
    auth: {
      issuer: e.AUTH_ISSUER,
      audience: e.AUTH_AUDIENCE,
      jwksUrl: e.AUTH_JWKS_URL,
      docsClientId: e.AUTH_DOCS_CLIENT_ID,
      consoleClientId: e.AUTH_CONSOLE_CLIENT_ID,
    },
    endpoints: { dynamodb: e.DYNAMODB_ENDPOINT, sqs: e.SQS_ENDPOINT, s3: e.S3_ENDPOINT },
    crewRunQueueUrl: e.CREW_RUN_QUEUE_URL,
    webhookQueueUrl: e.WEBHOOK_QUEUE_URL,
    runWebhookQueueUrl: e.RUN_WEBHOOK_QUEUE_URL,
    artifactsBucket: e.ARTIFACTS_BUCKET,
    kmsKeyId: e.KMS_KEY_ID,
    keycloak,
    trino,
    datahub,
    airflow,
    eventsTtlDays: e.EVENTS_TTL_DAYS,
    eventBusName: e.EVENT_BUS_NAME,
    scheduleGroupName: e.SCHEDULE_GROUP_NAME,
    schedulerRoleArn: e.SCHEDULER_ROLE_ARN,
    crewRunQueueArn: e.CREW_RUN_QUEUE_ARN,
    adapters: { metastore: e.METASTORE, catalog: e.CATALOG, idp: e.IDP, workflow: e.WORKFLOW },
    llm: {
      provider: llmProvider,
      baseUrl: e.LLM_BASE_URL,
      model: e.LLM_MODEL,
      apiKey: e.LLM_API_KEY,
      apiKeyArn: e.LLM_API_KEY_ARN,
      timeoutMs: e.LLM_TIMEOUT_SECONDS * 1000,
    },
    crewHttpAllowedHosts: hostList(e.CREW_HTTP_ALLOWED_HOSTS),
    webhookAllowedHosts: hostList(e.WEBHOOK_ALLOWED_HOSTS),
    corsOrigins: corsOrigins(e.CORS_ORIGINS),
    webhookRetrySchedule: e.WEBHOOK_RETRY_SCHEDULE
      ? e.WEBHOOK_RETRY_SCHEDULE.split(',').map((s) => Number(s.trim()))
      : DEFAULT_WEBHOOK_RETRY_SCHEDULE,
    buildNumber: e.BUILD_NUMBER,
  };
}

/**
 * LLM_PROVIDER, or `openai` when only LLM_BASE_URL is set; undefined when nothing is (no
 * model: `llm` steps fail saying so). Each provider's required settings are checked here.
 */
function modelProvider(e: z.output<typeof EnvSchema>): ModelProvider | undefined {
  const provider = e.LLM_PROVIDER ?? (e.LLM_BASE_URL ? 'openai' : undefined);
  if (provider === 'openai' && !e.LLM_BASE_URL) {
    throw new ConfigError('invalid configuration: LLM_BASE_URL is required when LLM_PROVIDER=openai');
  }
  if (provider === 'bedrock' && !e.LLM_MODEL) {
    throw new ConfigError(
      'invalid configuration: LLM_MODEL (a Bedrock model id, inference profile id or ARN) is required when LLM_PROVIDER=bedrock',
    );
  }
  if (provider === 'local' && e.AWS_LAMBDA_FUNCTION_NAME) {
    throw new ConfigError(
      'invalid configuration: LLM_PROVIDER=local is the local stand-in model, which does not run on AWS: set LLM_PROVIDER=bedrock (with LLM_MODEL) or openai (with LLM_BASE_URL)',
    );
  }
  return provider;
}
