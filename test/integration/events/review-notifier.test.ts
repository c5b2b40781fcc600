import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/eventually.js';
import { crewTemplate, startRun } from '../crew-support.js';
import { adminToken, api, baseUrl, slug, token } from '../helpers.js';

/**
 * examples/review-notifier.mjs, docs/events-and-webhooks.md's relay of `decision.version.submitted` and
 * `crew.run.waiting` to chat, run as a newcomer runs it (`node`, no dependencies) against
 * the test platform: a webhook endpoint points at it, and it POSTs `{"text"}` to a chat
 * receiver here. Everything is on loopback.
 */

const EXAMPLE = fileURLToPath(new URL('../../../examples/review-notifier.mjs', import.meta.url));

interface ChatMessage {
  readonly text: string;
  /** What the chat answered the relay. */
  readonly status: number;
}

/** A chat tool's incoming webhook on loopback: records each message and answers `status`. */
class ChatReceiver {
  readonly messages: ChatMessage[] = [];
  status = 200;
  private server: Server | undefined;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const status = this.status;
        let text = '';
        try {
          text = String((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { text: unknown }).text);
        } catch {
          text = '(not JSON)';
        }
        this.messages.push({ text, status });
        res.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'ok' : 'down');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
  }

  url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}/chat`;
  }

  /** Messages the chat accepted that contain `marker`. */
  accepted(marker: string): string[] {
    return this.messages.filter((m) => m.status < 300 && m.text.includes(marker)).map((m) => m.text);
  }

  /** Every message that contains `marker`, accepted or not. */
  all(marker: string): ChatMessage[] {
    return this.messages.filter((m) => m.text.includes(marker));
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

interface Delivery {
  id: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'succeeded' | 'retrying' | 'failed';
  attempts: number;
  last_response_status: number | null;
  last_attempt_at: string | null;
}

const chat = new ChatReceiver();
let admin: string;
let hook: { id: string; secret: string };
let relay: ChildProcess;
let relayUrl: string;
let output = '';

/** Starts the example as `node` would, and answers its URL from the line it prints. */
async function startRelay(secret: string): Promise<string> {
  relay = spawn(process.execPath, [EXAMPLE], {
    // Only what the example reads (and PATH): nothing of the test runner's environment.
    env: {
      PATH: process.env.PATH ?? '',
      WEBHOOK_SECRET: secret,
      CHAT_WEBHOOK_URL: chat.url(),
      DPM_BASE_URL: baseUrl(),
      PORT: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  relay.stdout!.setEncoding('utf8').on('data', (s: string) => (output += s));
  relay.stderr!.setEncoding('utf8').on('data', (s: string) => (output += s));
  return eventually(
    () =>
      /listening on (http:\/\/127\.0\.0\.1:\d+)\//.exec(output)?.[1] ??
      (relay.exitCode !== null ? 'exited' : undefined),
    10_000,
    'the relay to listen',
  ).then((url) => {
    if (url === 'exited') throw new Error(`the relay exited: ${output}`);
    return url;
  });
}

async function stopRelay(): Promise<void> {
  if (!relay || relay.exitCode !== null || relay.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => relay.once('exit', () => resolve()));
  relay.kill('SIGTERM');
  const timer = setTimeout(() => relay.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

beforeAll(async () => {
  await chat.start();
  admin = await adminToken(slug('notify-admin'));
  // Made disabled at a placeholder (the relay needs its secret before it listens), then
  // pointed at the relay and enabled.
  const made = await api('/api/webhooks', {
    method: 'POST',
    token: admin,
    body: {
      url: `${chat.url()}-placeholder`,
      event_types: ['decision.version.submitted', 'crew.run.waiting'],
      description: 'review-notifier example',
      enabled: false,
    },
  });
  expect(made.status, made.text).toBe(201);
  hook = { id: made.body.id, secret: made.body.secret };
  relayUrl = await startRelay(hook.secret);
  const enabled = await api(`/api/webhooks/${hook.id}`, {
    method: 'PATCH',
    token: admin,
    body: { url: `${relayUrl}/`, enabled: true },
  });
  expect(enabled.status, enabled.text).toBe(200);
}, 30_000);

afterAll(async () => {
  await stopRelay();
  if (hook) await api(`/api/webhooks/${hook.id}`, { method: 'DELETE', token: admin });
  await chat.stop();
});

const deliveries = async () => {
  const res = await api<Delivery[]>(`/api/webhooks/${hook.id}/deliveries?limit=1000`, { token: admin });
  expect(res.status, res.text).toBe(200);
  return res.body;
};

/** The endpoint's delivery of the event of `type` whose id is in `eventIds`, once `done` holds. */
const deliveryWhen = (eventId: string, done: (d: Delivery) => boolean, ms = 20_000) =>
  eventually(
    async () => (await deliveries()).find((d) => d.event_id === eventId && done(d)),
    ms,
    `delivery of ${eventId}`,
  );

/** The id of the one event of `type` about `subject`, from the feed. */
const eventIdOf = (subject: string, type: string) =>
  eventually(
    async () => {
      const res = await api(`/api/domain-events?subject=${encodeURIComponent(subject)}`, { token: admin });
      return (res.body as { id: string; type: string }[]).find((e) => e.type === type)?.id;
    },
    15_000,
    `${type} about ${subject}`,
  );

/** Creates version 1 of a fresh key as `author` and submits it; answers where it is. */
async function submitVersion(author: string): Promise<{ ws: string; key: string; subject: string }> {
  const ws = slug('finance');
  const key = slug('credit-limit');
  const base = `/api/decisions/${ws}/${key}/versions`;
  const created = await api(base, { method: 'POST', token: author, body: { content: { limit: 5000 } } });
  expect(created.status, created.text).toBe(201);
  const submitted = await api(`${base}/1/submit`, { method: 'POST', token: author });
  expect(submitted.status, submitted.text).toBe(200);
  return { ws, key, subject: `decisions/${ws}/${key}/versions/1` };
}

/** A decision.version.submitted envelope as the service sends it (for deliveries made here). */
const submittedEnvelope = (ws: string, key: string) => ({
  specversion: '1.0',
  id: randomUUID(),
  source: 'dpm/test',
  type: 'dpm.decision.version.submitted',
  subject: `decisions/${ws}/${key}/versions/1`,
  time: new Date().toISOString(),
  datacontenttype: 'application/json',
  actor: 'mallory',
  sequence: 2,
  data: { workspace: ws, key, version: 1, status: 'submitted', submitted_by: 'mallory' },
});

/** POSTs `body` to the relay with these Standard Webhooks headers; answers the status. */
const post = async (body: string, headers: Record<string, string>) =>
  (await fetch(`${relayUrl}/`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body }))
    .status;

/** Headers signing `body` as event `id` at `at` with `secret`. */
const signed = (secret: string, id: string, body: string, at = new Date()) => ({
  'webhook-id': id,
  'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
  'webhook-signature': new Webhook(secret).sign(id, at, body),
});

describe('examples/review-notifier.mjs', () => {
  it('tells the chat once that a decision version waits for review, with its console link; a redelivery says nothing more', async () => {
    const carol = slug('carol');
    const { ws, key, subject } = await submitVersion(await token(carol));
    const marker = `${ws}/${key}`;
    const [text] = await eventually(
      () => (chat.accepted(marker).length > 0 ? chat.accepted(marker) : undefined),
      20_000,
      'the chat message about the submitted version',
    );
    expect(text).toBe(`${carol} submitted ${ws}/${key} v1 for review: ${baseUrl()}/console/#/decisions/${ws}/${key}/1`);

    // The service saw the relay take it; only the submission was sent (not the creation).
    const eventId = await eventIdOf(subject, 'dpm.decision.version.submitted');
    const delivered = await deliveryWhen(eventId, (d) => d.status === 'succeeded');
    expect(delivered).toMatchObject({ attempts: 1, last_response_status: 204 });
    expect((await deliveries()).filter((d) => d.event_id === eventId)).toHaveLength(1);

    // A redelivery: the same webhook-id, freshly signed, accepted (2xx) and not told again.
    const again = await api(`/api/webhooks/${hook.id}/deliveries/${delivered.id}/redeliver`, {
      method: 'POST',
      token: admin,
    });
    expect(again.status, again.text).toBe(202);
    const redelivered = await deliveryWhen(
      eventId,
      (d) => d.status === 'succeeded' && d.last_attempt_at !== delivered.last_attempt_at,
    );
    expect(redelivered).toMatchObject({ attempts: 1, last_response_status: 204 });
    expect(chat.all(marker)).toHaveLength(1);
  });

  it('tells the chat once that a crew run waits on an approval step, with its console link', async () => {
    const templateId = await crewTemplate(admin, [
      { id: 'draft', kind: 'render', template: 'release 42' },
      { id: 'sign_off', kind: 'approval', prompt: 'Ship {{steps.draft.output}}?' },
    ]);
    const dana = slug('dana');
    const starter = await token(dana);
    const id = await startRun(templateId, starter);
    try {
      const [text] = await eventually(
        () => (chat.accepted(id).length > 0 ? chat.accepted(id) : undefined),
        20_000,
        'the chat message about the waiting run',
      );
      expect(text).toBe(
        `Run ${id} of template ${templateId} (started by ${dana}) waits for a person to decide its step "sign_off": ` +
          `${baseUrl()}/console/#/runs/${id}`,
      );
      const eventId = await eventIdOf(`crew-runs/${id}`, 'dpm.crew.run.waiting');
      await deliveryWhen(eventId, (d) => d.status === 'succeeded' && d.last_response_status === 204);
      // queued and started were not sent: the endpoint takes only the two types
      expect((await deliveries()).filter((d) => d.event_id === eventId)).toHaveLength(1);
      expect(chat.all(id)).toHaveLength(1);
    } finally {
      await api(`/api/crew-runs/${id}/cancel`, { method: 'POST', token: starter, body: {} });
    }
  });

  it('answers 2xx to another event type and tells the chat nothing', async () => {
    const before = chat.messages.length;
    const ping = await api<Delivery>(`/api/webhooks/${hook.id}/test`, { method: 'POST', token: admin });
    expect(ping.status, ping.text).toBe(202);
    const done = await deliveryWhen(ping.body.event_id, (d) => d.status === 'succeeded');
    expect(done).toMatchObject({ event_type: 'dpm.webhook.test', attempts: 1, last_response_status: 204 });
    expect(chat.messages.slice(before).filter((m) => m.text.includes(hook.id))).toEqual([]);
  });

  it('refuses a forged, altered or stale delivery with 401 and tells the chat nothing', async () => {
    const ws = slug('forged');
    const envelope = submittedEnvelope(ws, 'k');
    const body = JSON.stringify(envelope);
    const otherSecret = `whsec_${randomBytes(32).toString('base64')}`;
    // signed with another secret
    expect(await post(body, signed(otherSecret, envelope.id, body))).toBe(401);
    // the endpoint's signature over another body
    const altered = JSON.stringify({ ...envelope, actor: 'eve' });
    expect(await post(altered, signed(hook.secret, envelope.id, body))).toBe(401);
    // a good signature under another webhook-id
    expect(await post(body, { ...signed(hook.secret, envelope.id, body), 'webhook-id': randomUUID() })).toBe(401);
    // a good signature, ten minutes old
    expect(await post(body, signed(hook.secret, envelope.id, body, new Date(Date.now() - 600_000)))).toBe(401);
    // no signature, a signature of another version
    const good = signed(hook.secret, envelope.id, body);
    expect(await post(body, { ...good, 'webhook-signature': '' })).toBe(401);
    expect(await post(body, { ...good, 'webhook-signature': good['webhook-signature'].replace('v1,', 'v2,') })).toBe(
      401,
    );
    // Control: the same delivery rightly signed is told (the second of two signatures, as
    // during a rotation, is enough).
    const rotated = signed(otherSecret, envelope.id, body);
    const both = `${rotated['webhook-signature']} ${good['webhook-signature']}`;
    expect(await post(body, { ...good, 'webhook-signature': both })).toBe(204);
    expect(chat.all(ws).map((m) => m.text)).toEqual([
      `mallory submitted ${ws}/k v1 for review: ${baseUrl()}/console/#/decisions/${ws}/k/1`,
    ]);
  });

  it('answers non-2xx while the chat is down, so the service retries; once it is back, one message', async () => {
    const erin = slug('erin');
    chat.status = 500;
    try {
      const { ws, key, subject } = await submitVersion(await token(erin));
      const eventId = await eventIdOf(subject, 'dpm.decision.version.submitted');
      const retrying = await deliveryWhen(eventId, (d) => d.status === 'retrying');
      expect(retrying.last_response_status).toBe(502);
      expect(chat.all(`${ws}/${key}`).length).toBeGreaterThanOrEqual(1);
      expect(chat.accepted(`${ws}/${key}`)).toEqual([]);

      chat.status = 200;
      const done = await deliveryWhen(eventId, (d) => d.status === 'succeeded', 25_000);
      expect(done.last_response_status).toBe(204);
      expect(chat.accepted(`${ws}/${key}`)).toEqual([
        `${erin} submitted ${ws}/${key} v1 for review: ${baseUrl()}/console/#/decisions/${ws}/${key}/1`,
      ]);
    } finally {
      chat.status = 200;
    }
  }, 45_000);

  it('prints where it listens and never the secret', () => {
    expect(output).toContain(`review-notifier listening on ${relayUrl}/`);
    expect(output).not.toContain(hook.secret);
    expect(output).not.toContain(hook.secret.slice('whsec_'.length));
  });
});
