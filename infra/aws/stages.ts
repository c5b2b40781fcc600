import { RemovalPolicy } from 'aws-cdk-lib';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { ORIGIN } from '../../shared/cors.js';
import type { ReservedFunction } from '../groups.js';

/** Everything that differs between deployed stages; the stacks read only this record. */
export interface StageSettings {
  /** Unset account/region synthesize an environment-agnostic stack (deploy-time env). */
  readonly account?: string;
  readonly region?: string;
  readonly pointInTimeRecovery: boolean;
  /** Applied to tables, buckets, the KMS key, secrets and log groups; DESTROY also empties buckets. */
  readonly removalPolicy: RemovalPolicy;
  readonly logRetentionDays: RetentionDays;
  readonly lambdaMemoryMb: number;
  /** API functions answer inside API Gateway's 30 s integration limit. */
  readonly lambdaTimeoutSeconds: number;
  readonly tracing: boolean;
  readonly eventsTtlDays: number;
  /**
   * Days the archive of the stage's EventBridge bus (`dpm-<stage>`, docs/events-and-webhooks.md) keeps every
   * event put on it, for consumers to replay. A whole number ≥ 1: EventBridge reads 0 as
   * "forever", so a stage never gets unbounded retention by accident (see eventArchiveRetention).
   */
  readonly eventArchiveRetentionDays: number;
  /**
   * Crew runs carried at once on AWS (the crew worker's SQS event source `maxConcurrency`,
   * 2–1000): runs queued beyond it wait in the queue rather than taking the account's
   * Lambda concurrency.
   */
  readonly crewWorkerMaxConcurrency: number;
  /**
   * Browser origins allowed to call the API (`https://portal.example.com`): API Gateway
   * answers their preflights and adds the CORS headers. Default none: no browser page on
   * another origin may call the API.
   */
  readonly corsOrigins?: readonly string[];
  /** The other SQS event sources' `maxConcurrency` (the crew dead-letter handler, the two webhook workers). */
  readonly queueWorkerMaxConcurrency: number;
  /** The HTTP API stage's throttle, for every route: steady requests per second and burst. */
  readonly apiThrottle: Throttle;
  /** A tighter throttle for the expensive routes (EXPENSIVE_ROUTES: E2, E5, E10, E12). */
  readonly expensiveRouteThrottle: Throttle;
  /**
   * Concurrency reserved for the functions the API must not starve (those declaring
   * `reservesConcurrency` in infra/groups.ts): the crew worker, the events publisher and the
   * webhook worker (each is also capped at it); and for the crews
   * API, whose cap keeps a flood of E13 long polls (each holds an instance up to 20 s) from
   * taking the account's concurrency. None on dev: a new account's concurrency limit (10)
   * leaves nothing to reserve (AWS keeps 100 unreserved).
   */
  readonly reservedConcurrency?: Readonly<Record<ReservedFunction, number>>;
  readonly authIssuer?: string;
  readonly authAudience?: string;
  readonly authJwksUrl?: string;
  /** The issuer's public client /docs signs in with (authorization code + PKCE); default `dpm-docs`. */
  readonly authDocsClientId?: string;
  /** The issuer's public client /console signs in with (authorization code + PKCE); default `dpm-console`. */
  readonly authConsoleClientId?: string;
  /** Hosts crew HTTP tools may call; empty means none. */
  readonly crewHttpAllowedHosts: readonly string[];
  /** Hosts webhook endpoints may name over plain http (any host over https); empty means none. */
  readonly webhookAllowedHosts: readonly string[];
  /** Seconds before each webhook delivery retry; unset means the default retry schedule (docs/events-and-webhooks.md). */
  readonly webhookRetrySchedule?: readonly number[];
  /**
   * Who answers crew `llm` steps, `ask` and suggestions (LLM_PROVIDER): `openai` (an
   * OpenAI-compatible `llmBaseUrl`, its key in Secrets Manager) or `bedrock` (Amazon
   * Bedrock's Converse API, signed by the function's role: no key). Unset: `openai` when
   * `llmBaseUrl` is set, else none. `local` (the local stand-in model) is refused.
   */
  readonly llmProvider?: 'openai' | 'bedrock' | 'local';
  readonly llmBaseUrl?: string;
  /**
   * Model the crew worker asks for. With `bedrock`: a model id, an inference profile id or
   * an ARN of either; the functions that call the model may invoke exactly that resource.
   * With `openai` its API key comes from Secrets Manager, never from here.
   */
  readonly llmModel?: string;
  /** Identity provider of data shares; unset means the service's default (builtin). */
  readonly idp?: 'builtin' | 'keycloak';
  /**
   * A bootstrap admin pre-shared key (docs/identity-and-keys.md, DPM_ADMIN_PSK): Secrets Manager generates
   * it as `dpm/<stage>/admin-psk`; every function that checks keys reads it by ARN.
   */
  readonly adminPsk?: boolean;
  /**
   * The OpenAI-compatible endpoint's API key lives in Secrets Manager as
   * `dpm/<stage>/llm-api-key` (set its value after the first deploy); functions that call
   * the model read it by ARN.
   */
  readonly llmApiKeySecret?: boolean;
  /** Required when idp is keycloak. The admin client's secret lives in Secrets Manager, never here. */
  readonly keycloakUrl?: string;
  readonly keycloakRealm?: string;
  readonly keycloakAdminClientId?: string;
  /** Workflow engine of migration (E3/E4); unset means the service's default (builtin). */
  readonly workflow?: 'builtin' | 'airflow';
  /** Required when workflow is airflow. The password lives in Secrets Manager, never here. */
  readonly airflowBaseUrl?: string;
  readonly airflowUsername?: string;
  /**
   * Where the migration function runs, when set. Its E4 probes open TCP connections to the
   * customer's hosts (SSH, SMTP, HTTP, S3, Airflow): outside a VPC a Lambda reaches the internet
   * but no private host, so a stage whose hosts are private names a VPC that routes to them.
   * Only the migration function joins it, in the private subnets, with its own security group
   * (all outbound, no inbound). The VPC is imported from these ids, so synth stays offline.
   * In a VPC the function has no internet path of its own: the subnets need a NAT gateway for
   * AWS APIs and public hosts, or VPC endpoints for DynamoDB, KMS and Secrets Manager (and
   * whatever else the probes reach). Unset: the function runs outside any VPC.
   */
  readonly migrationVpc?: MigrationVpc;
  /** The API's 5xx answers, in percent of its requests over 5 minutes, at which an alarm fires. */
  readonly serverErrorAlarmPercent: number;
  /**
   * An existing SNS topic every alarm notifies (alarm and OK), by ARN. Unset: the alarms
   * still exist and show in CloudWatch, but notify no one.
   */
  readonly alarmTopicArn?: string;
  /**
   * Settings the stage cannot be synthesized without (see assertDeployable): prod must notify
   * someone, sign callers in and have its bootstrap admin key.
   */
  readonly required?: readonly RequiredSetting[];
}

/** Settings a stage may require; each says why in the synth's one-line refusal. */
export const REQUIRED_SETTINGS = {
  alarmTopicArn: 'the SNS topic its alarms notify',
  authIssuer: 'the OpenID issuer whose Bearer tokens it accepts',
  authAudience: "the audience its Bearer tokens must carry (aud, or a Cognito app client's client_id)",
  adminPsk: 'the bootstrap admin pre-shared key in Secrets Manager',
} as const;
export type RequiredSetting = keyof typeof REQUIRED_SETTINGS;

/** Settings an operator may give at synth time (`-c authIssuer=https://…`) instead of editing STAGES. */
export const CONTEXT_SETTINGS = [
  'account',
  'region',
  'alarmTopicArn',
  'authIssuer',
  'authAudience',
  'authJwksUrl',
] as const;
export type ContextSetting = (typeof CONTEXT_SETTINGS)[number];

export interface Throttle {
  /** Steady requests per second. */
  readonly rateLimit: number;
  /** Requests at once above the steady rate. */
  readonly burstLimit: number;
}

/** An existing VPC, by id (no lookup): privateSubnetIds spread across availabilityZones, in order. */
export interface MigrationVpc {
  readonly vpcId: string;
  readonly availabilityZones: readonly string[];
  readonly privateSubnetIds: readonly string[];
}

export type StageName = 'dev' | 'staging' | 'prod';

export const STAGES: Readonly<Record<StageName, StageSettings>> = {
  dev: {
    pointInTimeRecovery: false,
    removalPolicy: RemovalPolicy.DESTROY,
    logRetentionDays: RetentionDays.ONE_WEEK,
    lambdaMemoryMb: 512,
    lambdaTimeoutSeconds: 10,
    tracing: false,
    eventsTtlDays: 30,
    eventArchiveRetentionDays: 7,
    crewWorkerMaxConcurrency: 10,
    queueWorkerMaxConcurrency: 5,
    apiThrottle: { rateLimit: 50, burstLimit: 100 },
    expensiveRouteThrottle: { rateLimit: 5, burstLimit: 10 },
    crewHttpAllowedHosts: [],
    webhookAllowedHosts: [],
    serverErrorAlarmPercent: 10,
  },
  staging: {
    pointInTimeRecovery: true,
    removalPolicy: RemovalPolicy.RETAIN,
    logRetentionDays: RetentionDays.ONE_MONTH,
    lambdaMemoryMb: 1024,
    lambdaTimeoutSeconds: 10,
    tracing: true,
    eventsTtlDays: 30,
    eventArchiveRetentionDays: 30,
    crewWorkerMaxConcurrency: 20,
    queueWorkerMaxConcurrency: 10,
    apiThrottle: { rateLimit: 200, burstLimit: 400 },
    expensiveRouteThrottle: { rateLimit: 20, burstLimit: 40 },
    reservedConcurrency: { crews: 25, 'crews-worker': 20, 'domain-events-publisher': 5, 'webhooks-worker': 10 },
    crewHttpAllowedHosts: [],
    webhookAllowedHosts: [],
    serverErrorAlarmPercent: 5,
  },
  prod: {
    pointInTimeRecovery: true,
    removalPolicy: RemovalPolicy.RETAIN,
    logRetentionDays: RetentionDays.THREE_MONTHS,
    lambdaMemoryMb: 1024,
    lambdaTimeoutSeconds: 10,
    tracing: true,
    eventsTtlDays: 30,
    eventArchiveRetentionDays: 365,
    crewWorkerMaxConcurrency: 50,
    queueWorkerMaxConcurrency: 20,
    apiThrottle: { rateLimit: 500, burstLimit: 1000 },
    expensiveRouteThrottle: { rateLimit: 50, burstLimit: 100 },
    reservedConcurrency: { crews: 100, 'crews-worker': 50, 'domain-events-publisher': 10, 'webhooks-worker': 20 },
    crewHttpAllowedHosts: [],
    webhookAllowedHosts: [],
    serverErrorAlarmPercent: 1,
    adminPsk: true,
    // alarmTopicArn, authIssuer and authAudience are the account's: set them here or with -c at synth.
    required: ['alarmTopicArn', 'authIssuer', 'authAudience', 'adminPsk'],
  },
};

/** A stage's name with its settings: what the stacks are built from. */
export interface Stage extends StageSettings {
  readonly name: StageName;
}

export function stageNamed(name: string): Stage {
  if (!Object.hasOwn(STAGES, name)) {
    throw new Error(`unknown stage "${name}"; known stages: ${Object.keys(STAGES).join(', ')}`);
  }
  return { ...STAGES[name as StageName], name: name as StageName };
}

/**
 * The stage with the settings given in the CDK context (`-c key=value`, CONTEXT_SETTINGS only):
 * what app.ts builds the stacks from.
 */
export function stageFromContext(name: string, context: (key: string) => unknown): Stage {
  const stage: Record<string, unknown> = { ...stageNamed(name) };
  for (const key of CONTEXT_SETTINGS) {
    const value = context(key);
    if (value === undefined) continue;
    if (typeof value !== 'string' || value.trim() === '') throw new Error(`-c ${key} must be a non-empty value`);
    stage[key] = value.trim();
  }
  return stage as unknown as Stage;
}

const SNS_TOPIC_ARN = /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$/;

/**
 * Refuses, in one line naming every setting it lacks, a stage missing settings it requires
 * (an issuer without its audience included: every function would refuse to load), or giving
 * one that cannot work: called first by both stacks, so nothing half-built is ever
 * synthesized, and an operator fixes all of it in one round.
 */
export function assertDeployable(stage: Stage): void {
  const missing = new Set((stage.required ?? []).filter((setting) => !stage[setting]));
  if (stage.authIssuer && !stage.authAudience) missing.add('authAudience');
  const problems: string[] = [];
  if (missing.size > 0) {
    const each = [...missing].map((setting) => `${setting} (${REQUIRED_SETTINGS[setting]})`);
    const byContext = [...missing].filter((setting) => (CONTEXT_SETTINGS as readonly string[]).includes(setting));
    const where = byContext.length
      ? `set ${missing.size === 1 ? 'it' : 'them'} in infra/aws/stages.ts or pass ${byContext.map((s) => `-c ${s}=…`).join(' ')}`
      : `set ${missing.size === 1 ? 'it' : 'them'} in infra/aws/stages.ts`;
    problems.push(`cannot be synthesized without ${each.join(', ')}: ${where}`);
  }
  if (stage.alarmTopicArn !== undefined && !SNS_TOPIC_ARN.test(stage.alarmTopicArn)) {
    problems.push(`alarmTopicArn "${stage.alarmTopicArn}" is not an SNS topic ARN`);
  }
  const badOrigin = (stage.corsOrigins ?? []).find((o) => !ORIGIN.test(o));
  if (badOrigin !== undefined) problems.push(`corsOrigins '${badOrigin}' is not an origin (scheme://host[:port])`);
  if (stage.authIssuer !== undefined && !/^https:\/\/[^\s/?#]+[^\s?#]*$/.test(stage.authIssuer)) {
    problems.push(`authIssuer "${stage.authIssuer}" is not an https URL`);
  }
  problems.push(...modelProblems(stage));
  if (problems.length > 0) throw new Error(`stage "${stage.name}" ${problems.join('; ')}`);
}

/** What is wrong with the stage's model settings (none when it has no model). */
function modelProblems(stage: Stage): string[] {
  switch (stage.llmProvider) {
    case 'local':
      return [
        'sets llmProvider "local": the local stand-in model runs only on a developer\'s machine (npm start); use "bedrock" with llmModel, or "openai" with llmBaseUrl',
      ];
    case 'bedrock':
      if (!stage.llmModel)
        return ['sets llmProvider "bedrock" without llmModel (a Bedrock model id, inference profile id or ARN)'];
      if (!BEDROCK_MODEL.test(stage.llmModel))
        return [`llmModel "${stage.llmModel}" is not a Bedrock model id, inference profile id or ARN`];
      return [];
    case 'openai':
      return stage.llmBaseUrl ? [] : ['sets llmProvider "openai" without llmBaseUrl'];
    default:
      return [];
  }
}

/** A Bedrock model id or inference profile id (`anthropic.claude-3-haiku-20240307-v1:0`, `us.meta.llama3-…`), or an ARN. */
const BEDROCK_MODEL =
  /^(arn:aws[a-z-]*:bedrock:[a-z0-9-]+:(\d{12})?:(foundation-model|inference-profile|application-inference-profile|provisioned-model|custom-model|imported-model)\/[A-Za-z0-9._:/-]{1,200}|[A-Za-z0-9][A-Za-z0-9._:-]{0,200})$/;

/** Inference profile ids start with their geography (`us.`, `eu.`, `apac.`, `global.`...). */
const INFERENCE_PROFILE_ID = /^(us|eu|apac|us-gov|global|ca|jp|au)\./;

/**
 * The one Bedrock resource a bedrock stage's functions may invoke: the ARN as given, an
 * inference profile id's ARN in the stage's account and region, or a foundation model's.
 */
export function bedrockModelArn(model: string, scope: { partition: string; region: string; account: string }): string {
  if (model.startsWith('arn:')) return model;
  const { partition, region, account } = scope;
  return INFERENCE_PROFILE_ID.test(model)
    ? `arn:${partition}:bedrock:${region}:${account}:inference-profile/${model}`
    : `arn:${partition}:bedrock:${region}::foundation-model/${model}`;
}

/** Where a Keycloak stage keeps its admin client's secret (set the value after the first deploy). */
export const keycloakAdminClientSecretName = (stage: StageName): string => `dpm/${stage}/keycloak-admin-client-secret`;

/** The settings the Keycloak adapter needs besides the secret; a keycloak stage missing one fails the synth. */
export function keycloakSettings(stage: Stage): { url: string; realm: string; adminClientId: string } | undefined {
  if (stage.idp !== 'keycloak') return undefined;
  const settings = { url: stage.keycloakUrl, realm: stage.keycloakRealm, adminClientId: stage.keycloakAdminClientId };
  const missing = Object.entries({
    keycloakUrl: settings.url,
    keycloakRealm: settings.realm,
    keycloakAdminClientId: settings.adminClientId,
  }).find(([, value]) => !value);
  if (missing) throw new Error(`stage "${stage.name}" uses keycloak but has no ${missing[0]}`);
  return settings as { url: string; realm: string; adminClientId: string };
}

/** Where an Airflow stage keeps the Airflow user's password (set the value after the first deploy). */
export const airflowPasswordSecretName = (stage: StageName): string => `dpm/${stage}/airflow-password`;

export const adminPskSecretName = (stage: StageName): string => `dpm/${stage}/admin-psk`;

export const llmApiKeySecretName = (stage: StageName): string => `dpm/${stage}/llm-api-key`;

/** The stage's event archive retention in days, checked: a whole number ≥ 1 (0 would keep events forever). */
export function eventArchiveRetention(stage: Stage): number {
  const days = stage.eventArchiveRetentionDays;
  if (!Number.isInteger(days) || days < 1) {
    throw new Error(`stage "${stage.name}" eventArchiveRetentionDays must be a whole number of days ≥ 1, not ${days}`);
  }
  return days;
}

/** The settings the Airflow adapter needs besides the password; an airflow stage missing one fails the synth. */
export function airflowSettings(stage: Stage): { baseUrl: string; username: string } | undefined {
  if (stage.workflow !== 'airflow') return undefined;
  const settings = { baseUrl: stage.airflowBaseUrl, username: stage.airflowUsername };
  const missing = Object.entries({
    airflowBaseUrl: settings.baseUrl,
    airflowUsername: settings.username,
  }).find(([, value]) => !value);
  if (missing) throw new Error(`stage "${stage.name}" uses airflow but has no ${missing[0]}`);
  return settings as { baseUrl: string; username: string };
}

/** The stage's migration VPC, checked: a stage naming one without subnets or zones fails the synth. */
export function migrationVpcSettings(stage: Stage): MigrationVpc | undefined {
  const vpc = stage.migrationVpc;
  if (!vpc) return undefined;
  const empty = Object.entries({
    vpcId: vpc.vpcId ? [vpc.vpcId] : [],
    availabilityZones: vpc.availabilityZones,
    privateSubnetIds: vpc.privateSubnetIds,
  }).find(([, values]) => values.length === 0 || values.some((v) => !v));
  if (empty) throw new Error(`stage "${stage.name}" has a migrationVpc with no ${empty[0]}`);
  // Vpc.fromVpcAttributes deals the subnets out to the zones in order.
  if (vpc.privateSubnetIds.length % vpc.availabilityZones.length !== 0) {
    throw new Error(
      `stage "${stage.name}" migrationVpc has ${vpc.privateSubnetIds.length} privateSubnetIds for ` +
        `${vpc.availabilityZones.length} availabilityZones; give the same number of subnets in each zone`,
    );
  }
  return vpc;
}
