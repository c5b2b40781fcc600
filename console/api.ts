/** Calls to the service with the signed-in person's access token, and readable errors. */
import { accessToken } from './auth.js';

/** An answer that is not 2xx, with a sentence a person can read. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

interface ValidationIssue {
  loc?: (string | number)[];
  msg?: string;
}

/** The service's ErrorResponse or HTTPValidationError (see docs/api.md), as one sentence. */
function describe(status: number, body: unknown): string {
  const value = body as { error?: unknown; detail?: unknown } | null;
  if (value && Array.isArray(value.detail)) {
    const issues = (value.detail as ValidationIssue[]).map((d) => `${(d.loc ?? []).join('.')}: ${d.msg ?? 'invalid'}`);
    return `The request was not accepted (${status}): ${issues.join('; ')}`;
  }
  if (value && typeof value.error === 'string') {
    if (status === 401) return `Your sign-in is no longer valid (${value.error}): sign in again.`;
    if (status === 403) return `Not allowed (403): ${value.error}`;
    if (status === 409) return `Not possible now (409): ${value.error}`;
    return `${value.error} (${status})`;
  }
  return `The service answered ${status}.`;
}

export interface Answer<T> {
  readonly body: T;
  readonly headers: Headers;
}

export async function call<T>(path: string, options: { method?: string; body?: unknown } = {}): Promise<Answer<T>> {
  const headers: Record<string, string> = {};
  const token = accessToken();
  if (token) headers.authorization = `Bearer ${token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(path, {
      method: options.method ?? 'GET',
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
  } catch {
    throw new ApiError(0, 'The service did not answer: check the connection and try again.');
  }
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = text;
  }
  if (!res.ok) throw new ApiError(res.status, describe(res.status, body));
  return { body: body as T, headers: res.headers };
}

export const get = async <T>(path: string): Promise<T> => (await call<T>(path)).body;
export const post = async <T>(path: string, body?: unknown): Promise<T> =>
  (await call<T>(path, { method: 'POST', body })).body;

/** A path segment, escaped. */
export const seg = (value: string | number) => encodeURIComponent(String(value));

export const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

// The API's shapes (docs/api.md), as far as the console reads them.
export interface Me {
  name: string;
  principal: string;
  roles: string[];
  credential: 'bearer' | 'psk';
  session: boolean;
}

export interface DecisionItem {
  kind: 'decision_version';
  workspace: string;
  key: string;
  version: number;
  created_by: string;
  submitted_by: string | null;
  submitted_at: string | null;
  content_sha: string;
  notes: string | null;
}

export interface StepItem {
  kind: 'crew_step';
  correlation_id: string;
  step_id: string;
  template_id: string;
  template_name: string;
  prompt: string;
  role: string;
  started_by: string;
  waiting_since: string;
  expires_at: string;
}

export type ApprovalItem = DecisionItem | StepItem;

export interface Version {
  workspace: string;
  key: string;
  version: number;
  status: string;
  created_by: string;
  created_at: string;
  submitted_by?: string | null;
  submitted_at?: string | null;
  approved_by?: string | null;
  approved_at?: string | null;
  content_sha: string;
  content: unknown;
}

export interface Transition {
  from: string | null;
  to: string;
  action: string;
  by: string;
  at: string;
  notes: string | null;
}

export interface Change {
  op: 'add' | 'remove' | 'replace';
  path: string;
  old?: unknown;
  new?: unknown;
}

export interface Diff {
  from: { version: number; content_sha: string } | null;
  to: { version: number; content_sha: string };
  changes: Change[];
  /** The changes stop at a bound (1,000 changes, 1 MiB); `change_count` counts those found. */
  truncated: boolean;
  change_count?: number;
}

export interface Run {
  correlation_id: string;
  template_id: string;
  status: 'pending' | 'running' | 'waiting' | 'succeeded' | 'failed' | 'cancelled';
  values: Record<string, unknown>;
  created_by: string;
  created_at: string;
  /** When the worker started it (absent from a service older than this field). */
  started_at?: string | null;
  finished_at: string | null;
  error: string | null;
  progress: { completed_steps: number; total_steps: number; current_step: string | null };
  /** The run's own steps (absent from a service older than reruns). */
  step_ids?: string[];
  rerun_of?: string | null;
  schedule_id?: string | null;
}

export interface RunEvent {
  index: number;
  type: string;
  timestamp: string;
  step_id?: string;
  message: string;
  data?: Record<string, unknown>;
}

export interface Template {
  id: string;
  name: string;
  steps: { id: string; kind: string }[];
}

export const FINISHED: readonly Run['status'][] = ['succeeded', 'failed', 'cancelled'];

export const patch = async <T>(path: string, body: unknown): Promise<T> =>
  (await call<T>(path, { method: 'PATCH', body })).body;

/** Whether the signed-in person holds the admin role (a display hint: the server decides). */
export const isAdmin = (me: Me | undefined) => me?.roles.includes('admin') === true;

/** A crew schedule (docs/crews.md). */
export interface Schedule {
  id: string;
  template_id: string;
  name: string;
  expression: string;
  timezone: string;
  values: Record<string, unknown>;
  overlap: 'skip' | 'allow';
  enabled: boolean;
  next_run_at: string | null;
  last_run_at: string | null;
  last_correlation_id: string | null;
  last_skipped_at: string | null;
  created_by: string;
  created_at: string;
  updated_at: string;
}

/** A decision key of GET /api/decisions: its newest and its published version. */
export interface DecisionKey {
  workspace: string;
  key: string;
  latest_version: number;
  latest_status: string;
  published_version: number | null;
  updated_at: string;
}

/** A version as GET .../versions lists it (no content). */
export type VersionSummary = Omit<Version, 'content'> & { notes: string | null };

/** A webhook endpoint (docs/events-and-webhooks.md); its secret is never read by the console. */
export interface WebhookEndpoint {
  id: string;
  url: string;
  event_types: string[];
  description: string | null;
  enabled: boolean;
  disabled_reason: string | null;
  created_by: string;
  created_at: string;
  updated_at: string;
}

export const DELIVERY_STATUSES = ['pending', 'retrying', 'succeeded', 'failed'] as const;

export interface WebhookDelivery {
  id: string;
  event_id: string;
  event_type: string;
  status: (typeof DELIVERY_STATUSES)[number];
  attempts: number;
  last_response_status: number | null;
  last_error: string | null;
  last_attempt_at: string | null;
  next_attempt_at: string | null;
  duration_ms: number | null;
}
