import { type Clock, systemClock } from '../clock.js';
import { Conflict, Unavailable } from '../errors.js';
import { jsonOrUndefined, networkReason } from './answers.js';
import { logger } from '../logger.js';
import type { IdentityProvider, IdpClient, NewIdpClient } from '../ports/idp.js';

export interface KeycloakSettings {
  /** The server's base URL (with `/auth` for Keycloak before 17). */
  readonly url: string;
  readonly realm: string;
  /** A confidential client of `realm` whose service account may manage clients. */
  readonly clientId: string;
  /** The admin client's secret, or how to read it (e.g. from Secrets Manager). */
  readonly clientSecret: string | (() => Promise<string>);
}

export interface KeycloakOptions {
  /**
   * Per port operation, all its admin calls and the token they wait for together (default
   * 5 s; the clean-up of a half-made client gets 2 s more): a slow Keycloak becomes a 503
   * within the API's 10 s.
   */
  readonly timeoutMs?: number;
  /** What the admin token's age is read on: the system's unless given (Keycloak's tokens expire in real time). */
  readonly clock?: Clock;
}

/** Keycloak's ClientRepresentation, the fields used here. */
interface ClientRepresentation {
  id?: string;
  clientId?: string;
  name?: string;
  enabled?: boolean;
  serviceAccountsEnabled?: boolean;
}

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: unknown;
}

/** A token is renewed this long before it expires (at most half its lifetime). */
const RENEW_BEFORE_MS = 30_000;

/**
 * Keycloak's admin REST API (`/admin/realms/{realm}/clients`, `.../client-secret`),
 * authenticated with a client-credentials token of the admin client, cached until
 * shortly before it expires. The client id of the port is Keycloak's `clientId`; the
 * internal `id` is looked up with `GET /clients?clientId=`.
 */
/** The clean-up of a half-made client gets this long after the creation's deadline. */
const CLEANUP_MS = 2_000;

export class KeycloakIdentityProvider implements IdentityProvider {
  private readonly base: string;
  private readonly timeoutMs: number;
  private readonly clock: Clock;
  private token: { value: string; renewAt: number } | undefined;
  private pendingToken: Promise<string> | undefined;

  constructor(
    private readonly settings: KeycloakSettings,
    options: KeycloakOptions = {},
  ) {
    this.base = settings.url.replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? 5_000;
    this.clock = options.clock ?? systemClock;
  }

  async createClient(client: NewIdpClient): Promise<IdpClient> {
    const representation = {
      clientId: client.clientId,
      name: client.name,
      ...(client.description ? { description: client.description } : {}),
      enabled: true,
      protocol: 'openid-connect',
      publicClient: false,
      clientAuthenticatorType: 'client-secret',
      serviceAccountsEnabled: true,
      standardFlowEnabled: false,
      implicitFlowEnabled: false,
      directAccessGrantsEnabled: false,
    };
    // One deadline for the whole creation; the clean-up below has a short one of its own.
    const signal = this.deadline();
    const res = await this.admin('POST', '/clients', representation, signal);
    if (res.status === 409) throw new Conflict(`Client ${client.clientId} already exists in Keycloak`);
    if (res.status !== 201) throw unexpected('POST /clients', res);
    // Location: .../clients/{id}
    const id = res.headers.get('location')?.split('/').pop() || (await this.find(client.clientId, signal))?.id;
    if (!id) throw unexpected('POST /clients (no Location)', res);
    try {
      const created = await this.admin('GET', `/clients/${encodeURIComponent(id)}`, undefined, signal);
      if (created.status !== 200) throw unexpected('GET /clients/{id}', created);
      return toClient(created.body as ClientRepresentation, id, await this.readSecret(id, signal));
    } catch (err) {
      // We made this client: an orphan would hold the name and a live secret that nothing
      // manages, so it is removed (best effort) before the failure is reported.
      await this.admin(
        'DELETE',
        `/clients/${encodeURIComponent(id)}`,
        undefined,
        AbortSignal.timeout(CLEANUP_MS),
      ).catch(() => undefined);
      throw err;
    }
  }

  async getClient(clientId: string): Promise<IdpClient | undefined> {
    const signal = this.deadline();
    const rep = await this.find(clientId, signal);
    if (!rep?.id) return undefined;
    return toClient(rep, rep.id, await this.readSecret(rep.id, signal));
  }

  async regenerateSecret(clientId: string): Promise<IdpClient | undefined> {
    const signal = this.deadline();
    const rep = await this.find(clientId, signal);
    if (!rep?.id) return undefined;
    const res = await this.admin('POST', `/clients/${encodeURIComponent(rep.id)}/client-secret`, undefined, signal);
    if (res.status === 404) return undefined;
    if (res.status !== 200) throw unexpected('POST /clients/{id}/client-secret', res);
    return toClient(rep, rep.id, secretOf(res.body));
  }

  async deleteClient(clientId: string): Promise<boolean> {
    const signal = this.deadline();
    const rep = await this.find(clientId, signal);
    if (!rep?.id) return false;
    const res = await this.admin('DELETE', `/clients/${encodeURIComponent(rep.id)}`, undefined, signal);
    if (res.status === 404) return false;
    if (res.status !== 204 && res.status !== 200) throw unexpected('DELETE /clients/{id}', res);
    return true;
  }

  /** The client with exactly this clientId (the query matches exactly unless `search=true`). */
  private async find(clientId: string, signal: AbortSignal): Promise<ClientRepresentation | undefined> {
    const res = await this.admin('GET', `/clients?clientId=${encodeURIComponent(clientId)}`, undefined, signal);
    if (res.status !== 200 || !Array.isArray(res.body)) throw unexpected('GET /clients?clientId=', res);
    return (res.body as ClientRepresentation[]).find((c) => c.clientId === clientId);
  }

  /** The client's secret; one Keycloak will not show (403, 404, no value) is null, not an error. */
  private async readSecret(id: string, signal: AbortSignal): Promise<string | null> {
    const res = await this.admin('GET', `/clients/${encodeURIComponent(id)}/client-secret`, undefined, signal);
    if (res.status === 200) return secretOf(res.body);
    logger.info('Keycloak did not reveal a client secret', { client_uuid: id, status: res.status });
    return null;
  }

  /** One admin call; an expired or revoked token is renewed once. 5xx and no answer are `Unavailable`. */
  private async admin(method: string, path: string, body: unknown, signal: AbortSignal): Promise<Answer> {
    const url = `${this.base}/admin/realms/${encodeURIComponent(this.settings.realm)}${path}`;
    for (let attempt = 0; ; attempt++) {
      const token = await withinDeadline(this.accessToken(), signal);
      const res = await this.call(url, signal, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          accept: 'application/json',
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      if (res.status === 401 && attempt === 0) {
        if (this.token?.value === token) this.token = undefined;
        continue;
      }
      if (res.status >= 500) throw unexpected(`${method} ${path.split('?')[0]}`, res);
      if (res.status === 401) throw unexpected(`${method} ${path.split('?')[0]} (token refused)`, res);
      return res;
    }
  }

  /** The admin client's token: cached, and fetched once however many calls wait for it. */
  private async accessToken(): Promise<string> {
    if (this.token && this.clock.now() < this.token.renewAt) return this.token.value;
    this.pendingToken ??= this.fetchToken().finally(() => {
      this.pendingToken = undefined;
    });
    return this.pendingToken;
  }

  private async fetchToken(): Promise<string> {
    const url = `${this.base}/realms/${encodeURIComponent(this.settings.realm)}/protocol/openid-connect/token`;
    // Shared by every call waiting for it: a deadline of its own, not one caller's.
    const res = await this.call(url, this.deadline(), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: this.settings.clientId,
        client_secret:
          typeof this.settings.clientSecret === 'string'
            ? this.settings.clientSecret
            : await this.settings.clientSecret(),
      }).toString(),
    });
    const answer = res.body as { access_token?: unknown; expires_in?: unknown; error?: unknown } | undefined;
    if (res.status !== 200 || typeof answer?.access_token !== 'string') {
      // A refused admin client is a broken dependency for the caller; the log says which.
      logger.error('Keycloak refused the admin client credentials', {
        client_id: this.settings.clientId,
        status: res.status,
        error: typeof answer?.error === 'string' ? answer.error : undefined,
      });
      throw new Unavailable('The identity provider did not issue an admin token');
    }
    const lifetimeMs = (typeof answer.expires_in === 'number' ? answer.expires_in : 60) * 1000;
    const renewAt = this.clock.now() + lifetimeMs - Math.min(RENEW_BEFORE_MS, lifetimeMs / 2);
    this.token = { value: answer.access_token, renewAt };
    return answer.access_token;
  }

  /** The deadline of one port operation, all its calls together. */
  private deadline(): AbortSignal {
    return AbortSignal.timeout(this.timeoutMs);
  }

  private async call(url: string, signal: AbortSignal, init: RequestInit): Promise<Answer> {
    let res: Response;
    let text: string;
    try {
      res = await fetch(url, { ...init, redirect: 'manual', signal });
      text = await res.text();
    } catch (err) {
      logger.warn('Keycloak did not answer', { url: new URL(url).pathname, error: networkReason(err) });
      throw new Unavailable('The identity provider did not answer');
    }
    return { status: res.status, headers: res.headers, body: jsonOrUndefined(text) };
  }
}

/** `work`, unless the operation's deadline passes first (the work goes on for its other waiters). */
function withinDeadline<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new Unavailable('The identity provider did not answer'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Unavailable('The identity provider did not answer'));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

function unexpected(what: string, res: Answer): Unavailable {
  logger.warn('unexpected answer from Keycloak', { call: what, status: res.status });
  return new Unavailable(
    res.status >= 500 ? 'The identity provider failed' : 'The identity provider refused an administrative call',
  );
}

/** A CredentialRepresentation's value. */
function secretOf(body: unknown): string | null {
  const value = (body as { value?: unknown } | undefined)?.value;
  return typeof value === 'string' && value !== '' ? value : null;
}

const toClient = (rep: ClientRepresentation, id: string, secret: string | null): IdpClient => ({
  id,
  client_id: rep.clientId ?? '',
  name: rep.name ?? rep.clientId ?? '',
  enabled: rep.enabled ?? true,
  service_accounts_enabled: rep.serviceAccountsEnabled ?? false,
  secret,
});
