#!/usr/bin/env node
/**
 * review-notifier: tells reviewers in chat that something waits for them.
 *
 * A webhook receiver for the service's domain events (docs/events-and-webhooks.md): it verifies
 * each delivery's Standard Webhooks signature, and turns `dpm.decision.version.submitted`
 * and `dpm.crew.run.waiting` into one chat message each, with a link to the review console,
 * POSTed as `{"text": ...}` to an incoming webhook (Slack, Mattermost, Microsoft Teams
 * workflows and most chat tools take that JSON). Other event types are acknowledged and
 * ignored.
 *
 * Node 20 or later, no dependencies:
 *
 *   WEBHOOK_SECRET=whsec_... CHAT_WEBHOOK_URL=https://hooks.slack.com/services/... \
 *   DPM_BASE_URL=http://127.0.0.1:3000 node examples/review-notifier.mjs
 *
 * Environment:
 *   WEBHOOK_SECRET    required: the endpoint's `secret` as POST /api/webhooks answered it
 *   CHAT_WEBHOOK_URL  required: the chat's incoming-webhook URL
 *   DPM_BASE_URL      where people open the service (for console links); default http://127.0.0.1:3000
 *   PORT              port to listen on, on 127.0.0.1; default 8787 (0: any free port)
 *
 * It answers 2xx only once the chat took the message, so that the service retries a
 * delivery while the chat is down; deliveries are at least once, so it remembers the
 * `webhook-id`s it has passed on (in memory: a restart forgets them).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

/** A delivery whose timestamp is further than this from now is refused (replays). */
const TOLERANCE_SECONDS = 5 * 60;
/** How long the chat may take to accept a message. */
const CHAT_TIMEOUT_MS = 10_000;
/** The largest delivery read (a decision's content is at most 200 KiB). */
const MAX_BODY_BYTES = 1024 * 1024;
/** How many delivered `webhook-id`s are remembered; the oldest are forgotten first. */
const SEEN_LIMIT = 10_000;

/** One line naming a variable that is missing or wrong (never its value), then exit. */
function fail(line) {
  console.error(`review-notifier: ${line}`);
  process.exit(1);
}

function config(env) {
  const secret = env.WEBHOOK_SECRET ?? '';
  if (!secret) fail('WEBHOOK_SECRET is required (the "secret" POST /api/webhooks answered: whsec_...)');
  // The signing key is the base64 part of the secret, decoded.
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
  if (key.length === 0) fail('WEBHOOK_SECRET is not a whsec_ secret');

  const chat = env.CHAT_WEBHOOK_URL ?? '';
  if (!chat) fail("CHAT_WEBHOOK_URL is required (the chat tool's incoming-webhook URL)");
  if (!URL.canParse(chat) || !/^https?:$/.test(new URL(chat).protocol)) fail('CHAT_WEBHOOK_URL is not an http(s) URL');

  const base = env.DPM_BASE_URL || 'http://127.0.0.1:3000';
  if (!URL.canParse(base)) fail('DPM_BASE_URL is not a URL');

  const port = Number(env.PORT || 8787);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) fail('PORT is not a port number');

  return { key, chat, base: base.replace(/\/+$/, ''), port };
}

/**
 * Whether the Standard Webhooks headers sign `body` (the raw bytes) with `key`: any one
 * `v1,<base64>` in `webhook-signature` (two during a secret rotation) over
 * "<webhook-id>.<webhook-timestamp>.<body>", with a timestamp within the tolerance.
 */
function verify(key, headers, body, nowSeconds = Math.floor(Date.now() / 1000)) {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signatures !== 'string') return false;
  if (!/^\d{1,12}$/.test(timestamp) || Math.abs(nowSeconds - Number(timestamp)) > TOLERANCE_SECONDS) return false;
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
  return signatures.split(' ').some((signature) => {
    const [version, value] = signature.split(',', 2);
    if (version !== 'v1' || !value) return false;
    const given = Buffer.from(value, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

/** The chat message for an event, or undefined for a type that needs none. */
function messageFor(event, base) {
  const data = event.data ?? {};
  const seg = encodeURIComponent;
  switch (event.type) {
    case 'dpm.decision.version.submitted': {
      // data: the version as GET .../versions/{v} answers it (VersionDetail).
      const who = data.submitted_by ?? event.actor ?? 'someone';
      const link = `${base}/console/#/decisions/${seg(data.workspace)}/${seg(data.key)}/${data.version}`;
      return `${who} submitted ${data.workspace}/${data.key} v${data.version} for review: ${link}`;
    }
    case 'dpm.crew.run.waiting': {
      // data: the run as GET /api/crew-runs/{id} answers it. The step's prompt and role are
      // not in it (they are in the run's step.waiting event and in GET /api/approvals,
      // which the console shows); progress.current_step names the step that waits.
      const step = data.progress?.current_step;
      const link = `${base}/console/#/runs/${seg(data.correlation_id)}`;
      return (
        `Run ${data.correlation_id} of template ${data.template_id} (started by ${data.created_by}) ` +
        `waits for a person to decide${step ? ` its step "${step}"` : ''}: ${link}`
      );
    }
    default:
      return undefined;
  }
}

/** POSTs `{"text": text}` to the chat; true when it answered 2xx in time. */
async function tellChat(chat, text) {
  try {
    const res = await fetch(chat, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text }),
      redirect: 'error',
      signal: AbortSignal.timeout(CHAT_TIMEOUT_MS),
    });
    await res.arrayBuffer().catch(() => undefined);
    // The chat's URL is a secret of its own (a token in its path): only the status is printed.
    if (!res.ok) console.error(`review-notifier: the chat answered ${res.status}`);
    return res.ok;
  } catch (err) {
    console.error(`review-notifier: the chat did not answer (${err?.name ?? 'error'})`);
    return false;
  }
}

/** Reads a request's body whole, as bytes; undefined when it is larger than the limit. */
async function rawBody(req) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function notifier(settings) {
  /** `webhook-id`s whose message the chat took (a Set keeps insertion order: oldest first). */
  const seen = new Set();
  /** Deliveries being passed on now: a duplicate arriving meanwhile waits for the same answer. */
  const inFlight = new Map();

  const remember = (id) => {
    seen.add(id);
    if (seen.size > SEEN_LIMIT) seen.delete(seen.values().next().value);
  };

  /** The HTTP status to answer for a verified delivery. */
  async function handle(id, body) {
    if (seen.has(id)) return 204; // a redelivery of what the chat already has
    let event;
    try {
      event = JSON.parse(body.toString('utf8'));
    } catch {
      return 400;
    }
    const text = messageFor(event, settings.base);
    if (text === undefined) return 204; // another type: nothing to tell
    if (!(await tellChat(settings.chat, text))) return 502; // the service retries later
    remember(id);
    return 204;
  }

  /** The HTTP status to answer a request. */
  async function serve(req) {
    if (req.method !== 'POST') return 405;
    const body = await rawBody(req);
    if (body === undefined) return 413;
    if (!verify(settings.key, req.headers, body)) return 401;
    const id = req.headers['webhook-id'];
    let answer = inFlight.get(id);
    if (!answer) {
      answer = handle(id, body).finally(() => inFlight.delete(id));
      inFlight.set(id, answer);
    }
    return answer;
  }

  return createServer((req, res) => {
    serve(req).then(
      (status) => res.writeHead(status, status === 405 ? { allow: 'POST' } : {}).end(),
      () => res.destroy(), // the sender went away mid-body, or a bug: no answer is a failure too
    );
  });
}

const settings = config(process.env);
const server = notifier(settings);
server.on('error', (err) => fail(`cannot listen on 127.0.0.1:${settings.port} (${err.code ?? err.message})`));
server.listen(settings.port, '127.0.0.1', () => {
  const { port } = server.address();
  console.log(`review-notifier listening on http://127.0.0.1:${port}/ (console links to ${settings.base}/console/)`);
});
const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
