import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local server that answers as Keycloak's documented APIs do, for the parts the
 * Keycloak adapter uses:
 * - `POST /realms/{realm}/protocol/openid-connect/token`, grant `client_credentials`, the
 *   client authenticated by `client_id`/`client_secret` form fields or HTTP Basic;
 * - the admin REST API under `/admin/realms/{realm}` (Bearer token required):
 *   `GET /clients[?clientId=&search=]`, `POST /clients` (201 + Location, 409 when the
 *   clientId exists), `GET|DELETE /clients/{id}`, `GET|POST /clients/{id}/client-secret`
 *   (CredentialRepresentation `{"type": "secret", "value"}`).
 * Switches: `secretReadable = false` answers 403 on reading a secret (an admin client
 * without view rights); `mode = 'error'` answers 503 to everything, `'unreachable'`
 * drops every connection.
 */
export interface KeycloakClient {
  id: string;
  clientId: string;
  name?: string;
  description?: string;
  enabled: boolean;
  publicClient: boolean;
  serviceAccountsEnabled: boolean;
  clientAuthenticatorType: string;
  protocol: string;
  secret?: string;
  [field: string]: unknown;
}

export interface FakeKeycloak {
  readonly url: string;
  readonly realm: string;
  readonly adminClientId: string;
  readonly adminClientSecret: string;
  /** Clients by internal id (the admin client is one of them). */
  readonly clients: Map<string, KeycloakClient>;
  /** Every token request: which client asked, and whether it got a token. */
  readonly tokenRequests: { clientId: string | undefined; grantType: string | undefined; issued: boolean }[];
  /** Every admin call (method and path with query). */
  readonly adminRequests: { method: string; path: string }[];
  mode: 'up' | 'error' | 'unreachable';
  secretReadable: boolean;
  /** `GET /clients/{id}` answers 500 (a failure right after a client was created). */
  failClientRead: boolean;
  /** Invalidates every token issued so far (as a restart with new keys would). */
  revokeTokens(): void;
  /** The client with this clientId, if any. */
  byClientId(clientId: string): KeycloakClient | undefined;
  /** Asks the token endpoint as a client would; the status it answers. */
  clientCredentials(clientId: string, secret: string): Promise<number>;
  stop(): Promise<void>;
}

export interface FakeKeycloakOptions {
  readonly realm?: string;
  readonly adminClientId?: string;
  readonly adminClientSecret?: string;
  /** `expires_in` of issued tokens (Keycloak's default access token lifespan is 300 s). */
  readonly tokenLifespanSeconds?: number;
}

const newSecret = () => randomBytes(24).toString('base64url');

export async function startFakeKeycloak(options: FakeKeycloakOptions = {}): Promise<FakeKeycloak> {
  const realm = options.realm ?? 'dpm';
  const adminClientId = options.adminClientId ?? 'dpm-admin';
  const adminClientSecret = options.adminClientSecret ?? newSecret();
  const lifespan = options.tokenLifespanSeconds ?? 300;
  const clients = new Map<string, KeycloakClient>();
  const tokens = new Map<string, { clientId: string; expiresAt: number }>();
  const adminId = randomUUID();
  clients.set(adminId, {
    id: adminId,
    clientId: adminClientId,
    name: 'DPM administration',
    enabled: true,
    publicClient: false,
    serviceAccountsEnabled: true,
    clientAuthenticatorType: 'client-secret',
    protocol: 'openid-connect',
    secret: adminClientSecret,
  });
  let base = '';
  const byClientId = (clientId: string) => [...clients.values()].find((c) => c.clientId === clientId);

  const state: Omit<FakeKeycloak, 'url' | 'stop' | 'clientCredentials'> = {
    realm,
    adminClientId,
    adminClientSecret,
    clients,
    tokenRequests: [],
    adminRequests: [],
    mode: 'up',
    secretReadable: true,
    failClientRead: false,
    revokeTokens: () => tokens.clear(),
    byClientId,
  };

  const send = (res: ServerResponse, status: number, body?: unknown, headers: Record<string, string> = {}) => {
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    if (body === undefined) {
      res.statusCode = status;
      res.end();
      return;
    }
    res.statusCode = status;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(body));
  };

  function token(req: IncomingMessage, res: ServerResponse, raw: string) {
    const form = new URLSearchParams(raw);
    let clientId = form.get('client_id') ?? undefined;
    let secret = form.get('client_secret') ?? undefined;
    const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? '');
    if (basic) {
      const [id, pass] = Buffer.from(basic[1]!, 'base64').toString('utf8').split(':');
      clientId = decodeURIComponent(id ?? '');
      secret = decodeURIComponent(pass ?? '');
    }
    const grantType = form.get('grant_type') ?? undefined;
    const record = { clientId, grantType, issued: false };
    state.tokenRequests.push(record);
    if (grantType !== 'client_credentials')
      return send(res, 400, { error: 'unsupported_grant_type', error_description: 'Unsupported grant_type' });
    const client = clientId ? byClientId(clientId) : undefined;
    if (!client || client.publicClient || !client.enabled || client.secret !== secret)
      return send(res, 401, {
        error: 'unauthorized_client',
        error_description: 'Invalid client or Invalid client credentials',
      });
    if (!client.serviceAccountsEnabled)
      return send(res, 400, {
        error: 'unauthorized_client',
        error_description: 'Client not enabled to retrieve service account',
      });
    const accessToken = randomBytes(32).toString('base64url');
    tokens.set(accessToken, { clientId: client.clientId, expiresAt: Date.now() + lifespan * 1000 });
    record.issued = true;
    send(res, 200, {
      access_token: accessToken,
      expires_in: lifespan,
      refresh_expires_in: 0,
      token_type: 'Bearer',
      'not-before-policy': 0,
      scope: 'profile email',
    });
  }

  function admin(req: IncomingMessage, res: ServerResponse, url: URL, raw: string, rest: string[]) {
    const bearer = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '');
    const session = bearer ? tokens.get(bearer[1]!) : undefined;
    if (!session || session.expiresAt <= Date.now()) return send(res, 401, { error: 'HTTP 401 Unauthorized' });
    if (session.clientId !== adminClientId) return send(res, 403, { error: 'HTTP 403 Forbidden' });
    const method = req.method ?? 'GET';
    state.adminRequests.push({ method, path: `${url.pathname}${url.search}` });
    const [collection, id, sub, ...more] = rest;
    if (collection !== 'clients' || more.length > 0)
      return send(res, 404, { error: 'Unable to find matching target resource method' });

    if (id === undefined) {
      if (method === 'GET') {
        const clientId = url.searchParams.get('clientId');
        const search = url.searchParams.get('search') === 'true';
        const all = [...clients.values()].filter(
          (c) => !clientId || (search ? c.clientId.includes(clientId) : c.clientId === clientId),
        );
        return send(res, 200, all);
      }
      if (method === 'POST') {
        let rep: Partial<KeycloakClient>;
        try {
          rep = JSON.parse(raw) as Partial<KeycloakClient>;
        } catch {
          return send(res, 400, { error: 'unknown_error' });
        }
        if (typeof rep.clientId !== 'string' || rep.clientId === '')
          return send(res, 400, { errorMessage: 'Client id is required' });
        if (byClientId(rep.clientId)) return send(res, 409, { errorMessage: `Client ${rep.clientId} already exists` });
        const created: KeycloakClient = {
          ...rep,
          id: randomUUID(),
          clientId: rep.clientId,
          enabled: rep.enabled ?? true,
          publicClient: rep.publicClient ?? false,
          serviceAccountsEnabled: rep.serviceAccountsEnabled ?? false,
          clientAuthenticatorType: rep.clientAuthenticatorType ?? 'client-secret',
          protocol: rep.protocol ?? 'openid-connect',
        };
        // A confidential client gets a generated secret unless one was given.
        if (!created.publicClient) created.secret = rep.secret ?? newSecret();
        else delete created.secret;
        clients.set(created.id, created);
        return send(res, 201, undefined, { location: `${base}/admin/realms/${realm}/clients/${created.id}` });
      }
      return send(res, 405, { error: 'HTTP 405 Method Not Allowed' });
    }

    const client = clients.get(id);
    if (!client) return send(res, 404, { error: 'Could not find client' });
    if (sub === undefined) {
      if (method === 'GET') {
        if (state.failClientRead) return send(res, 500, { error: 'unknown_error' });
        return send(res, 200, client);
      }
      if (method === 'DELETE') {
        clients.delete(id);
        return send(res, 204);
      }
      return send(res, 405, { error: 'HTTP 405 Method Not Allowed' });
    }
    if (sub === 'client-secret') {
      if (method === 'GET') {
        if (!state.secretReadable) return send(res, 403, { error: 'HTTP 403 Forbidden' });
        return send(res, 200, { type: 'secret', value: client.secret });
      }
      if (method === 'POST') {
        client.secret = newSecret();
        return send(res, 200, { type: 'secret', value: client.secret });
      }
      return send(res, 405, { error: 'HTTP 405 Method Not Allowed' });
    }
    return send(res, 404, { error: 'Unable to find matching target resource method' });
  }

  const server: Server = createServer((req, res) => {
    if (state.mode === 'unreachable') {
      req.socket.destroy();
      return;
    }
    let raw = '';
    req.on('data', (chunk) => (raw += chunk));
    req.on('end', () => {
      if (state.mode === 'error') return send(res, 503, undefined);
      const url = new URL(req.url ?? '/', base);
      const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
      if (parts[0] === 'realms' && parts[2] === 'protocol' && parts.slice(3).join('/') === 'openid-connect/token') {
        if (parts[1] !== realm) return send(res, 404, { error: 'Realm does not exist' });
        if (req.method !== 'POST') return send(res, 405, { error: 'HTTP 405 Method Not Allowed' });
        return token(req, res, raw);
      }
      if (parts[0] === 'admin' && parts[1] === 'realms' && parts.length >= 4) {
        if (parts[2] !== realm) return send(res, 404, { error: 'Realm not found.' });
        return admin(req, res, url, raw, parts.slice(3));
      }
      send(res, 404, { error: 'Unable to find matching target resource method' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return Object.assign(state, {
    url: base,
    clientCredentials: async (clientId: string, secret: string) => {
      const res = await fetch(`${base}/realms/${realm}/protocol/openid-connect/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret }),
      });
      await res.text();
      return res.status;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
