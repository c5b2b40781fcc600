import type { RecordedExchange } from '../support/exchange-log.js';

/**
 * Finds secret values where the contract (the API reference) does not let them appear:
 * in a response other than the one that discloses them, or anywhere in the service log.
 * The secrets are learned from the recorded exchanges themselves (and from the few the
 * run configured or stored directly), so the check follows whatever the tests did.
 */

/** Shorter values could match by chance (and the contract's secrets are all longer). */
export const MIN_SECRET_LENGTH = 8;

export type SecretKind =
  | 'psk-secret'
  | 'data-share-secret'
  | 'webhook-secret'
  | 'objstore-secret-key'
  | 'connection-password'
  | 'admin-psk'
  | 'llm-api-key'
  | 'bearer-token';

/**
 * The only responses that may carry a secret, and only in one field. Every other response
 * (lists, errors, other resources) and the log may carry none.
 */
export interface Disclosure {
  readonly kind: SecretKind;
  readonly method: string;
  readonly path: RegExp;
  readonly status: number;
  /** The response field that holds the secret. */
  readonly field: string;
  /** The response field naming the resource the secret belongs to (another resource may not show it). */
  readonly owner?: string;
  /** Only the very response that made the secret (shown once). */
  readonly once?: boolean;
  readonly contract: string;
}

export const DISCLOSURES: readonly Disclosure[] = [
  {
    kind: 'psk-secret',
    method: 'POST',
    path: /^\/api\/dataproduct\/[^/]+\/psk$/,
    status: 201,
    field: 'key',
    once: true,
    contract: 'the secret is shown once at creation; lists, extension and errors never show it',
  },
  {
    kind: 'data-share-secret',
    method: 'POST',
    path: /^\/api\/data_shares$/,
    status: 201,
    field: 'secret',
    owner: 'name',
    contract: '201 SharedClient with its secret',
  },
  {
    kind: 'data-share-secret',
    method: 'GET',
    path: /^\/api\/data_shares\/[^/]+$/,
    status: 200,
    field: 'secret',
    owner: 'name',
    contract: '200 SharedClient with `secret`; the list has `secret` null',
  },
  {
    kind: 'data-share-secret',
    method: 'POST',
    path: /^\/api\/data_shares\/[^/]+\/rotate-secret$/,
    status: 200,
    field: 'secret',
    owner: 'name',
    contract: '200 SharedClient with the new secret',
  },
  {
    kind: 'webhook-secret',
    method: 'POST',
    path: /^\/api\/webhooks$/,
    status: 201,
    field: 'secret',
    owner: 'id',
    once: true,
    contract: 'the signing secret is shown only at creation and on rotation',
  },
  {
    kind: 'webhook-secret',
    method: 'POST',
    path: /^\/api\/webhooks\/[^/]+\/rotate-secret$/,
    status: 200,
    field: 'secret',
    owner: 'id',
    once: true,
    contract: 'the new signing secret is shown only in the rotation answer',
  },
  {
    kind: 'webhook-secret',
    method: 'POST',
    path: /^\/api\/crew-templates\/[^/]+\/run$/,
    status: 202,
    field: 'webhook_secret',
    owner: 'correlation_id',
    once: true,
    contract: "E2's answer adds `webhook_secret` when the body has `webhook_url`",
  },
];

/** Request fields that are write-only: whatever a client sends there never comes back (docs/data-and-catalog.md). */
export interface WriteOnlyFields {
  readonly kind: SecretKind;
  readonly method: string;
  readonly path: RegExp;
  readonly fields: readonly string[];
  readonly contract: string;
}

export const WRITE_ONLY_FIELDS: readonly WriteOnlyFields[] = [
  {
    kind: 'objstore-secret-key',
    method: 'PUT',
    path: /^\/api\/migration\/infrastructure-config$/,
    fields: ['objstore_source_secret_key', 'objstore_dest_secret_key'],
    contract: 'write-only, never in a response or a log',
  },
  {
    kind: 'connection-password',
    method: 'PUT',
    path: /^\/api\/migration\/connections\/[^/]+$/,
    fields: ['password'],
    contract: 'a connection is answered without `password`, never in a response or a log',
  },
];

// Not secrets by the contract, so not checked: MCP `env` values (spec 2.11 and E9 return
// them), object-store access keys and connection logins (returned by E3 / connections),
// PSK ids (`psk`, public).

/** One exchange as the scan sees it: the recorded one plus where it was recorded. */
export interface Exchange extends RecordedExchange {
  /** Unique in the run: the worker file and the exchange's order in it. */
  readonly id: string;
}

export interface SecretSource {
  readonly kind: string;
  readonly value: string;
  readonly source: string;
}

interface Allowance {
  readonly disclosure: Disclosure;
  readonly exchangeId?: string;
  readonly owner?: string;
  /**
   * The answer was an `Idempotency-Key` replay (`Idempotent-Replayed: true`, docs/identity-and-keys.md, idempotency keys): the
   * creation answer kept for that caller and key, given again, not a second disclosure. It
   * must repeat a creation answer of the same method and path.
   */
  readonly replayOf?: string;
}

interface Secret {
  readonly value: string;
  readonly kinds: Set<string>;
  /** Where it was first learned, for the failure message. */
  readonly origin: string;
  readonly allowances: Allowance[];
  readonly needles: readonly string[];
}

export interface Finding {
  readonly kind: string;
  readonly origin: string;
  /** `response to METHOD path → status (file › test)` or `service log line N`. */
  readonly where: string;
  /** A short excerpt around the value, with every known secret masked. */
  readonly excerpt: string;
}

export interface ScanInput {
  readonly exchanges: readonly Exchange[];
  readonly secrets: readonly SecretSource[];
  readonly log: string;
}

export interface ScanResult {
  readonly findings: Finding[];
  /** How many distinct secret values were learned, by kind. */
  readonly learned: Record<string, number>;
  readonly exchanges: number;
}

const pathOnly = (path: string) => path.split('?')[0]!;

export const describeExchange = (ex: Exchange) =>
  `${ex.method} ${ex.path} → ${ex.status} (${ex.file}${ex.test ? ` › ${ex.test}` : ''})`;

function parseJson(text: string | undefined): unknown {
  if (text === undefined || text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The values a body sends in `fields`; from a malformed body (which the service cannot
 * parse either, but may echo) they are read leniently, quoted or not.
 */
export function sentFieldValues(body: string | undefined, fields: readonly string[]): string[] {
  if (body === undefined) return [];
  const parsed = parseJson(body);
  if (isObject(parsed)) return fields.map((f) => parsed[f]).filter((v): v is string => typeof v === 'string');
  const values: string[] = [];
  for (const field of fields) {
    const pattern = new RegExp(`"${field}"\\s*:\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^\\s,}\\]"]+))`, 'g');
    for (const m of body.matchAll(pattern)) {
      const value = m[1] !== undefined ? (parseJson(`"${m[1]}"`) as string | undefined) : m[2];
      if (value !== undefined) values.push(value);
    }
  }
  return values;
}

/** The forms a value takes in a JSON text or a URL. */
function needlesOf(value: string): string[] {
  return [...new Set([value, JSON.stringify(value).slice(1, -1), encodeURIComponent(value)])];
}

export function scan(input: ScanInput): ScanResult {
  excerpts = 0;
  const secrets = new Map<string, Secret>();
  const findings: Finding[] = [];

  const learn = (value: unknown, kind: string, origin: string, allowance?: Allowance) => {
    if (typeof value !== 'string' || value.length < MIN_SECRET_LENGTH) return;
    let secret = secrets.get(value);
    if (!secret) {
      secret = { value, kinds: new Set(), origin, allowances: [], needles: needlesOf(value) };
      secrets.set(value, secret);
    }
    secret.kinds.add(kind);
    if (allowance) secret.allowances.push(allowance);
  };

  for (const s of input.secrets) learn(s.value, s.kind, `from ${s.source}`);
  for (const ex of input.exchanges) {
    const path = pathOnly(ex.path);
    const at = `in ${ex.method} ${ex.path} (${ex.file}${ex.test ? ` › ${ex.test}` : ''})`;
    learn(ex.request.psk, 'psk-secret', `sent as Authorization-PSK ${at}`);
    learn(ex.request.token, 'bearer-token', `sent as Bearer token ${at}`);
    for (const rule of WRITE_ONLY_FIELDS) {
      if (rule.method !== ex.method || !rule.path.test(path)) continue;
      for (const value of sentFieldValues(ex.request.body, rule.fields)) learn(value, rule.kind, `sent ${at}`);
    }
    for (const d of DISCLOSURES) {
      if (d.method !== ex.method || !d.path.test(path) || d.status !== ex.status) continue;
      const body = parseJson(ex.responseText);
      if (!isObject(body)) continue;
      const owner = d.owner ? String(body[d.owner]) : undefined;
      const replay = ex.responseHeaders['idempotent-replayed'] === 'true';
      learn(body[d.field], d.kind, `disclosed by ${describeExchange(ex)}`, {
        disclosure: d,
        exchangeId: d.once && !replay ? ex.id : undefined,
        owner,
        ...(d.once && replay ? { replayOf: `${ex.method} ${path}` } : {}),
      });
    }
  }

  // A secret disclosed as belonging to two resources is one resource's secret shown for another.
  for (const secret of secrets.values()) {
    const owners = new Set(secret.allowances.filter((a) => a.owner !== undefined).map((a) => a.owner));
    const shownOnce = secret.allowances.filter((a) => a.exchangeId !== undefined);
    for (const replay of secret.allowances.filter((a) => a.replayOf !== undefined)) {
      // The same disclosure rule: the same method and path as the creation it repeats.
      const original = shownOnce.find((a) => a.disclosure === replay.disclosure);
      if (!original)
        findings.push({
          kind: [...secret.kinds].join('+'),
          origin: secret.origin,
          where: `a replayed answer (${replay.replayOf}) of no creation answer that showed it`,
          excerpt: mask(secret.value, [...secrets.values()]),
        });
    }

    if (shownOnce.length > 1) {
      findings.push({
        kind: [...secret.kinds].join('+'),
        origin: secret.origin,
        where: `${shownOnce.length} creation answers (${shownOnce.map((a) => a.exchangeId).join(', ')}); it is shown once`,
        excerpt: mask(secret.value, [...secrets.values()]),
      });
    }
    if (owners.size > 1) {
      findings.push({
        kind: [...secret.kinds].join('+'),
        origin: secret.origin,
        where: `disclosed for ${owners.size} different resources: ${[...owners].join(', ')}`,
        excerpt: mask(secret.value, [...secrets.values()]),
      });
    }
  }

  const all = [...secrets.values()];
  const contains = (text: string, s: Secret) => s.needles.some((n) => text.includes(n));

  for (const ex of input.exchanges) {
    const headerText = Object.entries(ex.responseHeaders)
      .map(([k, v]) => `${k}: ${v}`)
      .join('\n');
    for (const secret of all) {
      if (contains(headerText, secret)) {
        findings.push(finding(secret, `response headers of ${describeExchange(ex)}`, headerText, all));
      }
      if (!contains(ex.responseText, secret)) continue;
      const rest = withoutDisclosedField(ex, secret);
      if (rest === undefined || contains(rest, secret)) {
        findings.push(finding(secret, `response to ${describeExchange(ex)}`, ex.responseText, all));
      }
    }
  }

  const logLines = input.log.split('\n');
  for (const secret of all) {
    if (!contains(input.log, secret)) continue;
    logLines.forEach((line, i) => {
      if (contains(line, secret)) findings.push(finding(secret, `service log line ${i + 1}`, line, all));
    });
  }

  const learned: Record<string, number> = {};
  for (const s of all) for (const k of s.kinds) learned[k] = (learned[k] ?? 0) + 1;
  return { findings, learned, exchanges: input.exchanges.length };
}

/**
 * When `ex` is a response allowed to show `secret`: its text with the disclosing field
 * emptied (the secret must not appear anywhere else in it). Otherwise undefined.
 */
function withoutDisclosedField(ex: Exchange, secret: Secret): string | undefined {
  const path = pathOnly(ex.path);
  for (const a of secret.allowances) {
    const d = a.disclosure;
    if (d.method !== ex.method || !d.path.test(path) || d.status !== ex.status) continue;
    if (a.exchangeId !== undefined && a.exchangeId !== ex.id) continue;
    const body = parseJson(ex.responseText);
    if (!isObject(body) || body[d.field] !== secret.value) continue;
    if (a.owner !== undefined && String(body[d.owner!]) !== a.owner) continue;
    return JSON.stringify({ ...body, [d.field]: null });
  }
  return undefined;
}

/** Every known secret in `text` replaced by its kind. */
function mask(text: string, secrets: readonly Secret[]): string {
  let out = text;
  // Longest first, so a secret containing another is masked whole.
  for (const s of [...secrets].sort((a, b) => b.value.length - a.value.length)) {
    for (const n of s.needles) if (out.includes(n)) out = out.split(n).join(`‹${[...s.kinds].join('+')}›`);
  }
  return out;
}

const EXCERPT = 80;
/** Excerpts cost a masking pass over the text: a systematic leak needs only the first few. */
const MAX_EXCERPTS = 100;
let excerpts = 0;

function finding(secret: Secret, where: string, text: string, all: readonly Secret[]): Finding {
  const kind = [...secret.kinds].join('+');
  if (excerpts++ >= MAX_EXCERPTS) return { kind, origin: secret.origin, where, excerpt: '(excerpt not shown)' };
  // Mask the whole text, then cut around the first occurrence: no secret shows at the edges.
  const masked = mask(text, all);
  const pos = masked.indexOf(`‹${kind}›`);
  const excerpt = masked.slice(Math.max(0, pos - EXCERPT), pos + kind.length + 2 + EXCERPT);
  return { kind, origin: secret.origin, where, excerpt: `…${excerpt}…` };
}

export function formatFindings(findings: readonly Finding[], limit = 25): string {
  const lines = findings
    .slice(0, limit)
    .map((f, i) => `${i + 1}. ${f.kind} (${f.origin})\n   appears in ${f.where}\n   ${f.excerpt}`);
  if (findings.length > limit) lines.push(`… and ${findings.length - limit} more`);
  return lines.join('\n');
}
