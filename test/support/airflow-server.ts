import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';

/**
 * A local server that answers as Airflow's stable REST API v1 documents
 * (airflow/api_connexion/openapi/v1.yaml), for the parts the Airflow adapter uses:
 * - HTTP Basic auth on every call: a wrong or missing user is 401 with an RFC 7807 problem
 *   (`{"detail", "status", "title", "type"}`) and `WWW-Authenticate: Basic`; the viewer
 *   user may read but gets 403 PermissionDenied on writes;
 * - `GET|PATCH /api/v1/variables/{variable_key}` (PATCH of a missing key is 404, a body key
 *   other than the path's is 400, a non-string value is 400) and `POST /api/v1/variables`
 *   (creates or overwrites);
 * - `GET /api/v1/connections/{connection_id}` (never with the write-only `password`);
 * - `POST /api/v1/connections/test` with a Connection body (`connection_id` and `conn_type`
 *   required, `extra` a string, unknown fields refused) answering `{"status", "message"}`.
 *   Like a hook's `test_connection`, the default tester opens a TCP connection to
 *   host:port. With `testConnectionEnabled = false` it answers 403 in plain text, as Airflow
 *   does when `[core] test_connection` is not `Enabled`.
 * Switches: `mode = 'error'` answers 500 to everything, `'unreachable'` drops every
 * connection, `'hang'` never answers; `failWhen` answers 500 to chosen requests.
 */
export interface AirflowConnectionRecord {
  connection_id: string;
  conn_type: string;
  description?: string | null;
  host?: string | null;
  port?: number | null;
  schema?: string | null;
  login?: string | null;
  password?: string | null;
  extra?: string | null;
}

export interface RecordedRequest {
  readonly method: string;
  /** Path with query, as received (still percent-encoded). */
  readonly path: string;
  /** The user the Basic credentials named, whether or not they were accepted. */
  readonly user: string | undefined;
  readonly authorized: boolean;
  readonly body: unknown;
}

export type ConnectionTester = (conn: AirflowConnectionRecord) => Promise<{ status: boolean; message: string }>;

export interface FakeAirflow {
  readonly url: string;
  readonly username: string;
  readonly password: string;
  readonly viewerUsername: string;
  readonly viewerPassword: string;
  readonly variables: Map<string, { value: string; description: string | null }>;
  readonly connections: Map<string, AirflowConnectionRecord>;
  readonly requests: RecordedRequest[];
  mode: 'up' | 'error' | 'unreachable' | 'hang';
  testConnectionEnabled: boolean;
  tester: ConnectionTester;
  /** When set and true for a request (method, path without query), that request is answered 500. */
  failWhen: ((method: string, path: string) => boolean) | undefined;
  stop(): Promise<void>;
}

export interface FakeAirflowOptions {
  readonly username?: string;
  readonly password?: string;
}

const DOCS = 'https://airflow.apache.org/docs/apache-airflow/2.10.5/stable-rest-api-ref.html#section/Errors';

/** Opens a TCP connection as most hooks' `test_connection` effectively does. */
export const tcpTester: ConnectionTester = (conn) =>
  new Promise((resolve) => {
    if (!conn.host) return resolve({ status: false, message: 'host is required' });
    if (!conn.port) return resolve({ status: false, message: 'port is required' });
    const socket = connect({ host: conn.host, port: conn.port });
    const done = (status: boolean, message: string) => {
      socket.destroy();
      resolve({ status, message });
    };
    socket.setTimeout(2_000, () => done(false, 'timed out'));
    socket.once('connect', () => done(true, 'Connection successfully tested'));
    socket.once('error', (err: NodeJS.ErrnoException) =>
      done(false, err.code === 'ECONNREFUSED' ? '[Errno 111] Connection refused' : String(err.message)),
    );
  });

const CONNECTION_FIELDS = new Set([
  'connection_id',
  'conn_type',
  'description',
  'host',
  'port',
  'schema',
  'login',
  'password',
  'extra',
]);

export async function startFakeAirflow(options: FakeAirflowOptions = {}): Promise<FakeAirflow> {
  const username = options.username ?? 'dpm';
  const password = options.password ?? 'airflow-Pa55-word';
  const viewerUsername = 'viewer';
  const viewerPassword = 'viewer-Pa55';
  let base = '';

  const state: Omit<FakeAirflow, 'url' | 'stop'> = {
    username,
    password,
    viewerUsername,
    viewerPassword,
    variables: new Map(),
    connections: new Map(),
    requests: [],
    mode: 'up',
    testConnectionEnabled: true,
    tester: tcpTester,
    failWhen: undefined,
  };

  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    res.statusCode = status;
    if (typeof body === 'string') {
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(body);
      return;
    }
    res.setHeader('content-type', status >= 400 ? 'application/problem+json' : 'application/json');
    res.end(JSON.stringify(body));
  };

  const problem = (res: ServerResponse, status: number, name: string, title: string, detail: string | null = null) =>
    send(
      res,
      status,
      { detail, status, title, type: `${DOCS}/${name}` },
      status === 401 ? { 'WWW-Authenticate': 'Basic' } : {},
    );

  const variableBody = (key: string) => {
    const v = state.variables.get(key)!;
    return { key, value: v.value, description: v.description };
  };

  /** marshmallow's VariableSchema: `key` and `value` required strings. */
  const variableErrors = (body: unknown): string | undefined => {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return "{'_schema': ['Invalid input type.']}";
    const b = body as Record<string, unknown>;
    const errors: string[] = [];
    for (const field of ['key', 'value']) {
      if (!(field in b)) errors.push(`'${field}': ['Missing data for required field.']`);
      else if (typeof b[field] !== 'string') errors.push(`'${field}': ['Not a valid string.']`);
    }
    return errors.length ? `{${errors.join(', ')}}` : undefined;
  };

  /** marshmallow's ConnectionSchema (unknown fields raise). */
  const connectionErrors = (body: unknown): string | undefined => {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return "{'_schema': ['Invalid input type.']}";
    const b = body as Record<string, unknown>;
    const errors: string[] = [];
    for (const field of Object.keys(b))
      if (!CONNECTION_FIELDS.has(field)) errors.push(`'${field}': ['Unknown field.']`);
    for (const field of ['connection_id', 'conn_type'])
      if (typeof b[field] !== 'string' || b[field] === '')
        errors.push(`'${field}': ['Missing data for required field.']`);
    for (const field of ['description', 'host', 'schema', 'login', 'extra'])
      if (b[field] !== undefined && b[field] !== null && typeof b[field] !== 'string')
        errors.push(`'${field}': ['Not a valid string.']`);
    if (b.password !== undefined && typeof b.password !== 'string') errors.push("'password': ['Not a valid string.']");
    if (b.port !== undefined && b.port !== null && !Number.isInteger(b.port))
      errors.push("'port': ['Not a valid integer.']");
    return errors.length ? `{${errors.join(', ')}}` : undefined;
  };

  async function handle(req: IncomingMessage, res: ServerResponse, raw: string) {
    const url = new URL(req.url ?? '/', base);
    const method = req.method ?? 'GET';
    let body: unknown;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      body = undefined;
    }
    const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? '');
    const [user, pass] = basic
      ? (() => {
          const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
          const colon = decoded.indexOf(':');
          return [decoded.slice(0, colon), decoded.slice(colon + 1)];
        })()
      : [undefined, undefined];
    const role =
      user === username && pass === password
        ? 'admin'
        : user === viewerUsername && pass === viewerPassword
          ? 'viewer'
          : undefined;
    state.requests.push({ method, path: `${url.pathname}${url.search}`, user, authorized: role !== undefined, body });

    if (state.mode === 'error' || state.failWhen?.(method, url.pathname))
      return problem(res, 500, 'Unknown', 'Internal Server Error');
    if (!url.pathname.startsWith('/api/v1/')) return problem(res, 404, 'NotFound', 'Not Found');
    if (!role) return problem(res, 401, 'Unauthenticated', 'Unauthorized');
    const denied = () => problem(res, 403, 'PermissionDenied', 'Forbidden');
    const rest = url.pathname.slice('/api/v1/'.length);

    if (rest === 'variables') {
      if (method !== 'POST') return problem(res, 405, 'MethodNotAllowed', 'Method Not Allowed');
      if (role !== 'admin') return denied();
      const invalid = variableErrors(body);
      if (invalid) return problem(res, 400, 'BadRequest', 'Invalid Variable schema', invalid);
      const { key, value } = body as { key: string; value: string };
      state.variables.set(key, { value, description: state.variables.get(key)?.description ?? null });
      return send(res, 200, variableBody(key));
    }

    if (rest.startsWith('variables/')) {
      const key = decodeURIComponent(rest.slice('variables/'.length));
      if (method === 'GET') {
        if (!state.variables.has(key)) return problem(res, 404, 'NotFound', 'Variable not found');
        return send(res, 200, variableBody(key));
      }
      if (method === 'PATCH') {
        if (role !== 'admin') return denied();
        const invalid = variableErrors(body);
        if (invalid) return problem(res, 400, 'BadRequest', 'Invalid Variable schema', invalid);
        const { key: bodyKey, value } = body as { key: string; value: string };
        if (bodyKey !== key)
          return problem(
            res,
            400,
            'BadRequest',
            'Invalid post body',
            "key from request body doesn't match uri parameter",
          );
        const existing = state.variables.get(key);
        if (!existing) return problem(res, 404, 'NotFound', 'Variable not found', 'Variable does not exist');
        existing.value = value;
        return send(res, 200, variableBody(key));
      }
      return problem(res, 405, 'MethodNotAllowed', 'Method Not Allowed');
    }

    if (rest === 'connections/test') {
      if (method !== 'POST') return problem(res, 405, 'MethodNotAllowed', 'Method Not Allowed');
      if (role !== 'admin') return denied();
      if (!state.testConnectionEnabled)
        return send(
          res,
          403,
          'Testing connections is disabled in Airflow configuration. Contact your deployment admin to enable it.',
        );
      const invalid = connectionErrors(body);
      if (invalid) return problem(res, 400, 'BadRequest', 'Bad Request', invalid);
      const result = await state.tester(body as AirflowConnectionRecord);
      return send(res, 200, { status: result.status, message: result.message });
    }

    if (rest.startsWith('connections/')) {
      const id = decodeURIComponent(rest.slice('connections/'.length));
      if (method !== 'GET') return problem(res, 405, 'MethodNotAllowed', 'Method Not Allowed');
      const conn = state.connections.get(id);
      if (!conn)
        return problem(
          res,
          404,
          'NotFound',
          'Connection not found',
          `The Connection with connection_id: \`${id}\` was not found`,
        );
      return send(res, 200, {
        connection_id: conn.connection_id,
        conn_type: conn.conn_type,
        description: conn.description ?? null,
        host: conn.host ?? null,
        login: conn.login ?? null,
        schema: conn.schema ?? null,
        port: conn.port ?? null,
        extra: conn.extra ?? null,
      });
    }

    return problem(res, 404, 'NotFound', 'Not Found');
  }

  const server: Server = createServer((req, res) => {
    if (state.mode === 'unreachable') {
      req.socket.destroy();
      return;
    }
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (raw += chunk));
    req.on('end', () => {
      if (state.mode === 'hang') return;
      handle(req, res, raw).catch((err: unknown) => {
        res.statusCode = 500;
        res.end(String(err));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return Object.assign(state, {
    url: base,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
