import { describe, expect, it } from 'vitest';
import { deferredWorkflow } from '../../shared/adapters/airflow.js';
import { checkLocalSignIn, ConfigError, isLoopbackHost, loadConfig } from '../../shared/config.js';
import type { WorkflowEngine } from '../../shared/ports/workflow.js';

const fails = (env: Record<string, string>) => {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
};

describe('loadConfig', () => {
  it('has the local defaults', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      stage: 'local',
      port: 3000,
      host: '127.0.0.1',
      dataDir: '.data',
      adapters: { metastore: 'builtin', catalog: 'builtin', idp: 'builtin', workflow: 'builtin' },
      eventsTtlDays: 30,
      crewHttpAllowedHosts: [],
      buildNumber: 'local',
    });
    expect(c.keycloak).toBeUndefined();
    expect(c.airflow).toBeUndefined();
  });

  it('serves HTTPS on HTTPS_PORT, by default PORT + 443', () => {
    expect(loadConfig({}).httpsPort).toBe(3443);
    expect(loadConfig({ PORT: '8080' }).httpsPort).toBe(8523);
    expect(loadConfig({ PORT: '0' }).httpsPort).toBe(0);
    expect(loadConfig({ PORT: '3000', HTTPS_PORT: '8443' }).httpsPort).toBe(8443);
    expect(loadConfig({ HTTPS_PORT: ' ' }).httpsPort).toBe(3443);
    expect(fails({ HTTPS_PORT: 'x' })).toBe('invalid configuration: HTTPS_PORT must be a port number');
    expect(fails({ PORT: '4000', HTTPS_PORT: '4000' })).toBe('invalid configuration: HTTPS_PORT must differ from PORT');
    expect(fails({ PORT: '65100' })).toMatch(/^invalid configuration: HTTPS_PORT is required when PORT is above 65092/);
    expect(loadConfig({ PORT: '65100', HTTPS_PORT: '0' }).httpsPort).toBe(0);
  });

  it('fails with one line naming the variable', () => {
    expect(fails({ PORT: 'abc' })).toBe('invalid configuration: PORT must be a port number');
    expect(fails({ STAGE: 'Prod!' })).toMatch(/^invalid configuration: STAGE /);
    expect(fails({ AUTH_ISSUER: 'not a url' })).toMatch(/^invalid configuration: AUTH_ISSUER /);
    expect(fails({ IDP: 'okta' })).toBe('invalid configuration: IDP must be one of builtin, keycloak');
    expect(fails({ DPM_ADMIN_PSK: 'short' })).toMatch(/DPM_ADMIN_PSK must be at least 16 characters/);
    for (const message of [fails({ PORT: 'x' }), fails({ IDP: 'keycloak' })]) expect(message).not.toContain('\n');
  });

  it('reads DPM_LOCAL_USERS in both forms, and refuses a bad one with one line', () => {
    expect(loadConfig({}).localUsers).toEqual([
      { name: 'alice', roles: ['approver'] },
      { name: 'bob', roles: ['approver'] },
      { name: 'carol', roles: [] },
      { name: 'dana', roles: ['admin'] },
    ]);
    expect(loadConfig({ DPM_LOCAL_USERS: 'ann:admin,approver;ben:' }).localUsers).toEqual([
      { name: 'ann', roles: ['admin', 'approver'] },
      { name: 'ben', roles: [] },
    ]);
    expect(loadConfig({ DPM_LOCAL_USERS: 'ann:admin+approver,ben' }).localUsers).toEqual([
      { name: 'ann', roles: ['admin', 'approver'] },
      { name: 'ben', roles: [] },
    ]);
    expect(fails({ DPM_LOCAL_USERS: 'a b:admin' })).toMatch(
      /^invalid configuration: DPM_LOCAL_USERS has an invalid user name 'a b'/,
    );
    expect(fails({ DPM_LOCAL_USERS: 'ann:admin;ann:' })).toBe(
      "invalid configuration: DPM_LOCAL_USERS names user 'ann' twice",
    );
    expect(fails({ DPM_LOCAL_USERS: 'ann:ad min' })).toMatch(/invalid role 'ad min'/);
    expect(fails({ DPM_LOCAL_USERS: ' ; ' })).toMatch(/names no user/);
  });

  it('refuses an issuer without an audience: tokens of every client of the issuer would pass', () => {
    expect(fails({ AUTH_ISSUER: 'https://id.example.com/realms/dpm' })).toBe(
      'invalid configuration: AUTH_AUDIENCE is required when AUTH_ISSUER is set',
    );
    const c = loadConfig({ AUTH_ISSUER: 'https://id.example.com/realms/dpm', AUTH_AUDIENCE: 'dpm-api' });
    expect(c.auth).toMatchObject({ issuer: 'https://id.example.com/realms/dpm', audience: 'dpm-api' });
  });

  it('serves the passwordless local sign-in on loopback only: another HOST needs AUTH_ISSUER', () => {
    const refusal = (host: string) =>
      `invalid configuration: HOST ${host} is not a loopback address, and the local sign-in (no AUTH_ISSUER) lets anyone who reaches it in as any user, admins too, with no password: set AUTH_ISSUER (and AUTH_AUDIENCE) to serve beyond this machine, or use HOST=127.0.0.1`;
    for (const host of [
      '0.0.0.0',
      '::',
      '0:0:0:0:0:0:0:0',
      '192.168.1.20',
      '10.0.0.5',
      '::ffff:10.0.0.5',
      'fe80::1',
      'dpm.example.com',
      'localhost.example.com',
    ])
      expect(fails({ HOST: host }), host).toBe(refusal(host));
    // Spellings of loopback, and the name localhost.
    for (const host of [
      '127.0.0.1',
      '127.0.0.2',
      '127.0.1.1',
      '::1',
      '0:0:0:0:0:0:0:1',
      '::ffff:127.0.0.1',
      'localhost',
      'LocalHost',
    ])
      expect(loadConfig({ HOST: host }).host, host).toBe(host);
    // With a real issuer, any HOST: its tokens are what a caller needs.
    const open = loadConfig({
      HOST: '0.0.0.0',
      AUTH_ISSUER: 'https://id.example.com/realms/dpm',
      AUTH_AUDIENCE: 'dpm',
    });
    expect(open.host).toBe('0.0.0.0');
    // The check itself, as startPlatform makes it on a Config made otherwise.
    expect(() => checkLocalSignIn('0.0.0.0', undefined)).toThrow(ConfigError);
    expect(() => checkLocalSignIn('0.0.0.0', 'https://id.example.com/realms/dpm')).not.toThrow();
    expect(['127.0.0.1', '::1', 'localhost', '0.0.0.0', '::'].map(isLoopbackHost)).toEqual([
      true,
      true,
      true,
      false,
      false,
    ]);
  });

  it('needs the Keycloak settings with IDP=keycloak, the secret itself or its ARN', () => {
    expect(fails({ IDP: 'keycloak' })).toBe('invalid configuration: KEYCLOAK_URL is required when IDP=keycloak');
    const base = {
      IDP: 'keycloak',
      KEYCLOAK_URL: 'http://kc:8080',
      KEYCLOAK_REALM: 'data',
      KEYCLOAK_ADMIN_CLIENT_ID: 'dpm',
    };
    expect(fails(base)).toMatch(/KEYCLOAK_ADMIN_CLIENT_SECRET \(or KEYCLOAK_ADMIN_CLIENT_SECRET_ARN\) is required/);
    expect(loadConfig({ ...base, KEYCLOAK_ADMIN_CLIENT_SECRET: 's' }).keycloak?.clientSecret).toEqual({ value: 's' });
    expect(loadConfig({ ...base, KEYCLOAK_ADMIN_CLIENT_SECRET_ARN: 'arn:x' }).keycloak?.clientSecret).toEqual({
      arn: 'arn:x',
    });
  });

  it('needs the Airflow settings with WORKFLOW=airflow, the password itself or its ARN', () => {
    expect(fails({ WORKFLOW: 'airflow' })).toBe(
      'invalid configuration: AIRFLOW_BASE_URL is required when WORKFLOW=airflow',
    );
    const base = { WORKFLOW: 'airflow', AIRFLOW_BASE_URL: 'http://af:8080', AIRFLOW_USERNAME: 'dpm' };
    expect(fails(base)).toMatch(/AIRFLOW_PASSWORD \(or AIRFLOW_PASSWORD_ARN\) is required/);
    expect(loadConfig({ ...base, AIRFLOW_PASSWORD_ARN: 'arn:y' }).airflow?.password).toEqual({ arn: 'arn:y' });
  });

  it('reads the crew http allow-list as lowercase hosts', () => {
    expect(loadConfig({ CREW_HTTP_ALLOWED_HOSTS: ' API.example.com, ,127.0.0.1 ' }).crewHttpAllowedHosts).toEqual([
      'api.example.com',
      '127.0.0.1',
    ]);
  });

  it('reads the webhook settings: hosts allowed over http, and the retry schedule (the documented schedule by default)', () => {
    const defaults = loadConfig({});
    expect(defaults.webhookAllowedHosts).toEqual([]);
    expect(defaults.webhookRetrySchedule).toEqual([5, 300, 1800, 7200, 18_000, 36_000, 36_000]);
    expect(defaults.webhookQueueUrl).toBeUndefined();
    const set = loadConfig({
      WEBHOOK_ALLOWED_HOSTS: 'Hooks.Example.com, 127.0.0.1',
      WEBHOOK_RETRY_SCHEDULE: ' 1, 2 ,30 ',
      WEBHOOK_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/1/dpm-prod-webhook-deliveries',
    });
    expect(set.webhookAllowedHosts).toEqual(['hooks.example.com', '127.0.0.1']);
    expect(set.webhookRetrySchedule).toEqual([1, 2, 30]);
    for (const bad of ['soon', '5,,10', '-5', '1.5', '5;10'])
      expect(fails({ WEBHOOK_RETRY_SCHEDULE: bad })).toMatch(/^invalid configuration: WEBHOOK_RETRY_SCHEDULE must be /);
  });

  it("reads the crew schedules' Scheduler settings (AWS), all three or none", () => {
    const local = loadConfig({});
    expect([local.scheduleGroupName, local.schedulerRoleArn, local.crewRunQueueArn]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    const aws = {
      SCHEDULE_GROUP_NAME: 'dpm-prod',
      SCHEDULER_ROLE_ARN: 'arn:aws:iam::123456789012:role/Dpm-prod-Stateful-SchedulerRole',
      CREW_RUN_QUEUE_ARN: 'arn:aws:sqs:eu-west-1:123456789012:dpm-prod-crew-runs',
    };
    expect(loadConfig(aws)).toMatchObject({
      scheduleGroupName: 'dpm-prod',
      schedulerRoleArn: aws.SCHEDULER_ROLE_ARN,
      crewRunQueueArn: aws.CREW_RUN_QUEUE_ARN,
    });
    expect(fails({ ...aws, SCHEDULER_ROLE_ARN: ' ' })).toBe(
      'invalid configuration: SCHEDULER_ROLE_ARN is required when SCHEDULE_GROUP_NAME is set',
    );
    expect(fails({ SCHEDULE_GROUP_NAME: 'dpm-prod', SCHEDULER_ROLE_ARN: aws.SCHEDULER_ROLE_ARN })).toBe(
      'invalid configuration: CREW_RUN_QUEUE_ARN is required when SCHEDULE_GROUP_NAME is set',
    );
  });

  it('reads CORS_ORIGINS as lowercase origins (none by default), and refuses anything else with one line', () => {
    expect(loadConfig({}).corsOrigins).toEqual([]);
    expect(loadConfig({ CORS_ORIGINS: ' https://Portal.example.com, ,http://localhost:5173 ' }).corsOrigins).toEqual([
      'https://portal.example.com',
      'http://localhost:5173',
    ]);
    for (const bad of [
      '*',
      'portal.example.com',
      'https://portal.example.com/',
      'ftp://x.example',
      'https://a.example/path',
    ])
      expect(fails({ CORS_ORIGINS: bad }), bad).toMatch(/^invalid configuration: CORS_ORIGINS '.*' is not an origin/);
  });
});

describe('deferredWorkflow', () => {
  it('builds the engine once, on first use, and again after a failed build', async () => {
    let builds = 0;
    const engine: WorkflowEngine = {
      publishConfig: async () => undefined,
      getConnection: async (id) => ({ conn_id: id, conn_type: 'http', host: 'h' }),
      testConnection: async () => ({ ok: true, message: 'fine' }),
    };
    const deferred = deferredWorkflow(async () => {
      builds++;
      if (builds === 1) throw new Error('secret store down');
      return engine;
    });
    expect(builds).toBe(0);
    await expect(deferred.getConnection('a')).rejects.toThrow('secret store down');
    expect(await deferred.getConnection('a')).toMatchObject({ conn_id: 'a' });
    expect(await deferred.testConnection({ conn_id: 'a', conn_type: 'http', host: 'h' }, 'http')).toEqual({
      ok: true,
      message: 'fine',
    });
    expect(builds).toBe(2);
  });
});
