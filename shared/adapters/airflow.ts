import { DomainError, Unavailable } from '../errors.js';
import { jsonOrUndefined, networkReason } from './answers.js';
import { logger } from '../logger.js';
import type { ProbeResult, ProbeType, WorkflowConnection, WorkflowEngine } from '../ports/workflow.js';
import { redactSecret } from '../redact.js';

export interface AirflowSettings {
  /** The webserver's base URL (`/api/v1` is appended; a trailing one is tolerated). */
  readonly baseUrl: string;
  readonly username: string;
  readonly password: string;
}

export interface AirflowOptions {
  /**
   * Per operation (default 6 s; a config update's variable writes share it): a slow Airflow
   * becomes a 503 within the API's 10 s. Above the
   * 5 s that Airflow's own connection test may take (E4), so a slow probe is still a result.
   */
  readonly timeoutMs?: number;
}

/** Configuration fields whose Airflow Variable is not simply `nx1_<field>` (docs/data-and-catalog.md). */
const VARIABLE_NAMES: Readonly<Record<string, string>> = {
  copy_mappers: 'nx1_migration_distcp_mappers',
  copy_bandwidth: 'nx1_migration_distcp_bandwidth',
  default_objstore_bucket: 'nx1_migration_default_s3_bucket',
  email_recipients: 'nx1_migration_email_recipients',
  report_output_location: 'nx1_migration_report_location',
  tracking_database: 'nx1_migration_tracking_database',
  tracking_location: 'nx1_migration_tracking_location',
  migration_smtp_conn_id: 'nx1_migration_smtp_conn_id',
  migration_compute_conn_id: 'nx1_migration_spark_conn_id',
  fs_ticketfile_location: 'nx1_mapr_ticketfile_location',
  fs_user: 'nx1_mapr_user',
};

/** The Airflow Variable the migration DAGs read for a configuration field. */
export function airflowVariableName(field: string): string {
  return Object.hasOwn(VARIABLE_NAMES, field) ? VARIABLE_NAMES[field]! : `nx1_${field}`;
}

/** Airflow's Connection schema (stable REST API v1); `password` is write-only, `extra` a JSON string. */
interface AirflowConnection {
  connection_id?: string;
  conn_type?: string;
  host?: string | null;
  port?: number | null;
  schema?: string | null;
  login?: string | null;
  extra?: string | null;
}

interface Answer {
  readonly status: number;
  /** Parsed JSON, or undefined for an empty or non-JSON body. */
  readonly body: unknown;
  readonly text: string;
}

/**
 * Airflow's stable REST API v1 with HTTP Basic auth: configuration fields become
 * Variables (`PATCH /variables/{key}`, `POST /variables` when missing), connections are
 * read with `GET /connections/{id}` and tested with `POST /connections/test`.
 * Airflow not answering, answering 5xx, or refusing our credentials is `Unavailable`:
 * it is this service's dependency, not the caller's fault.
 */
export class AirflowWorkflow implements WorkflowEngine {
  private readonly base: string;
  private readonly authorization: string;
  private readonly timeoutMs: number;

  constructor(
    private readonly settings: AirflowSettings,
    options: AirflowOptions = {},
  ) {
    this.base = `${settings.baseUrl.replace(/\/+$/, '').replace(/\/api\/v1$/, '')}/api/v1`;
    this.authorization = `Basic ${Buffer.from(`${settings.username}:${settings.password}`, 'utf8').toString('base64')}`;
    this.timeoutMs = options.timeoutMs ?? 6_000;
  }

  async publishConfig(changes: Readonly<Record<string, string | number | null>>): Promise<void> {
    const entries = Object.entries(changes);
    // One deadline for the whole update, however many variables it writes.
    const signal = AbortSignal.timeout(this.timeoutMs);
    for (const [index, [field, value]] of entries.entries()) {
      const key = airflowVariableName(field);
      // Variables are strings; a cleared field is an empty one, which the DAGs treat as unset.
      const variable = { key, value: value === null ? '' : String(value) };
      try {
        const patched = await this.call('PATCH', `/variables/${encodeURIComponent(key)}`, variable, signal);
        if (patched.status === 200) continue;
        if (patched.status !== 404) throw this.unexpected(`PATCH /variables/${key}`, patched);
        const created = await this.call('POST', '/variables', variable, signal);
        if (created.status !== 200 && created.status !== 201) throw this.unexpected('POST /variables', created);
      } catch (err) {
        if (!(err instanceof DomainError) || entries.length === 1) throw err;
        // The caller can retry the whole update; say how far this one got.
        logger.warn('Airflow variables partly published', { failed: key, written: index, total: entries.length });
        throw new Unavailable(`${err.message} (writing ${key}; ${index} of ${entries.length} variables were written)`);
      }
    }
  }

  /** The connection as Airflow returns it: Airflow never returns a password, so it has none. */
  async getConnection(connId: string): Promise<WorkflowConnection | undefined> {
    const res = await this.call('GET', `/connections/${encodeURIComponent(connId)}`);
    if (res.status === 404) return undefined;
    if (res.status !== 200 || typeof res.body !== 'object' || res.body === null)
      throw this.unexpected('GET /connections/{id}', res);
    const conn = res.body as AirflowConnection;
    return {
      conn_id: conn.connection_id ?? connId,
      conn_type: conn.conn_type ?? '',
      host: conn.host ?? '',
      port: conn.port ?? null,
      schema: conn.schema ?? null,
      login: conn.login ?? null,
      extra: parseExtra(conn.extra, connId),
    };
  }

  /** Airflow runs the hook's own test; the probe type is this service's notion and is not sent. */
  async testConnection(connection: WorkflowConnection, _probe: ProbeType): Promise<ProbeResult> {
    // Absent rather than null: the schema's `password` is not nullable.
    const body = Object.fromEntries(
      Object.entries({
        connection_id: connection.conn_id,
        conn_type: connection.conn_type,
        host: connection.host || undefined,
        port: connection.port,
        schema: connection.schema,
        login: connection.login,
        password: connection.password,
        extra: connection.extra ? JSON.stringify(connection.extra) : undefined,
      }).filter(([, value]) => value !== undefined && value !== null),
    );
    const res = await this.call('POST', '/connections/test', body);
    const hide = (text: string) => redactSecret(redactSecret(text, connection.password), this.settings.password);
    if (res.status === 200) {
      const answer = res.body as { status?: unknown; message?: unknown } | undefined;
      const ok = answer?.status === true;
      const message = typeof answer?.message === 'string' && answer.message !== '' ? answer.message : undefined;
      return { ok, message: hide(message ?? (ok ? 'Connection successfully tested' : 'Airflow reported a failure')) };
    }
    // Airflow's schema validation refused the connection: a reason about it, not an outage.
    if (res.status === 400) return { ok: false, message: hide(`Airflow rejected the connection: ${detailOf(res)}`) };
    throw this.unexpected('POST /connections/test', res);
  }

  /** One call. No answer, a timeout, 5xx, 401 and 403 are `Unavailable`; other statuses are returned. */
  private async call(
    method: string,
    path: string,
    body?: unknown,
    signal: AbortSignal = AbortSignal.timeout(this.timeoutMs),
  ): Promise<Answer> {
    const route = `${method} ${routeOf(path)}`;
    let res: Response;
    let text: string;
    try {
      res = await fetch(`${this.base}${path}`, {
        method,
        redirect: 'manual',
        signal,
        headers: {
          authorization: this.authorization,
          accept: 'application/json',
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      text = await res.text();
    } catch (err) {
      const timedOut = (err as Error)?.name === 'TimeoutError';
      logger.warn('Airflow did not answer', {
        call: route,
        origin: new URL(this.base).origin,
        error: networkReason(err),
      });
      throw new Unavailable(
        timedOut ? `Airflow did not answer within ${this.timeoutMs / 1000} s` : 'Airflow is not reachable', // where: in the log, not in the answer
      );
    }
    const parsed = jsonOrUndefined(text);
    const answer = { status: res.status, body: parsed, text };
    if (res.status === 401) {
      logger.error('Airflow refused the configured credentials', { call: route, status: 401 });
      throw new Unavailable(
        `Airflow refused the configured credentials of user '${this.settings.username}' (HTTP 401): check AIRFLOW_USERNAME and AIRFLOW_PASSWORD`,
      );
    }
    if (res.status === 403) {
      if (path === '/connections/test' && /disabled/i.test(text)) {
        logger.error('Airflow has connection testing disabled', { call: route, status: 403 });
        throw new Unavailable(
          'Airflow has connection testing disabled: set [core] test_connection = Enabled (AIRFLOW__CORE__TEST_CONNECTION)',
        );
      }
      logger.error('Airflow refused the configured user', { call: route, status: 403 });
      throw new Unavailable(
        `Airflow refused the configured credentials of user '${this.settings.username}' for ${route} (HTTP 403): the user lacks the permission`,
      );
    }
    if (res.status >= 500) throw this.unexpected(route, answer);
    return answer;
  }

  private unexpected(call: string, res: Answer): Unavailable {
    logger.warn('unexpected answer from Airflow', { call, status: res.status });
    const detail = detailOf(res);
    return new Unavailable(
      redactSecret(
        res.status >= 500
          ? `Airflow failed (HTTP ${res.status}) on ${call}`
          : `Airflow answered HTTP ${res.status} to ${call}${detail ? `: ${detail}` : ''}`,
        this.settings.password,
      ),
    );
  }
}

/** A variable key or connection id is logged; the path shape is what names the call. */
function routeOf(path: string): string {
  return path
    .replace(/^\/variables\/.+$/, '/variables/{key}')
    .replace(/^\/connections\/(?!test$).+$/, '/connections/{id}');
}

/** The RFC 7807 problem's detail (or title), shortened. */
function detailOf(res: Answer): string {
  const problem = res.body as { detail?: unknown; title?: unknown } | undefined;
  const text =
    typeof problem?.detail === 'string' && problem.detail
      ? problem.detail
      : typeof problem?.title === 'string'
        ? problem.title
        : res.text.slice(0, 200);
  return text.length > 200 ? `${text.slice(0, 197)}...` : text;
}

function parseExtra(extra: string | null | undefined, connId: string): Record<string, unknown> | null {
  if (!extra) return null;
  try {
    const parsed: unknown = JSON.parse(extra);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // reported below
  }
  logger.warn('Airflow connection extra is not a JSON object', { conn_id: connId });
  return null;
}

/**
 * A workflow engine built on first use, for settings that must be fetched first (the
 * Airflow password from Secrets Manager); a failed build is tried again on the next call.
 */
export function deferredWorkflow(build: () => Promise<WorkflowEngine>): WorkflowEngine {
  let engine: Promise<WorkflowEngine> | undefined;
  const get = () => {
    engine ??= build().catch((err: unknown) => {
      engine = undefined;
      throw err;
    });
    return engine;
  };
  return {
    publishConfig: async (changes) => (await get()).publishConfig(changes),
    getConnection: async (connId) => (await get()).getConnection(connId),
    testConnection: async (connection, probe) => (await get()).testConnection(connection, probe),
  };
}
