/** `npm start`: the whole service on this machine, on embedded defaults. */
import { ConfigError, loadConfig } from '../../shared/config.js';
import { STAND_IN_LABEL } from './stand-in-model.js';
import { logger } from '../../shared/logger.js';
import { nodeVersionNote } from './node-version.js';
import { StartupError } from './startup-error.js';
import { type RunningPlatform, startPlatform } from './platform.js';

// The SDK's notice about future Node versions is noise for a local run.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/** What stops the service: Ctrl-C, `kill <pid>` (also of npm, which passes it on), the terminal closing. */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
/**
 * A second signal this soon after the first is the same stop: a terminal's Ctrl-C reaches
 * npm, which passes it on, and this process. A later one exits at once.
 */
const SAME_STOP_MS = 1_000;
/** How often a service started by npm checks that npm is still there. */
const PARENT_CHECK_MS = 500;

/** Aborted with the reason to stop (a signal's name): during start-up too. */
const stopRequested = new AbortController();
let requestedAt = 0;
let platform: RunningPlatform | undefined;

function requestStop(reason: string): void {
  if (stopRequested.signal.aborted) {
    if (Date.now() - requestedAt < SAME_STOP_MS) return;
    // Asked again while stopping: no more waiting. DynamoDB Local exits with this process.
    console.error(`dpm: ${reason} again: exiting without waiting for the stop`);
    process.exit(1);
  }
  requestedAt = Date.now();
  stopRequested.abort(reason);
}

for (const signal of STOP_SIGNALS) process.on(signal, () => requestStop(signal));

// Started by npm, whose shell or whose own end (a kill -9) would leave this process running
// on its port with nobody to stop it: it stops when its parent is gone.
if (process.env.npm_lifecycle_event === 'start') {
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) requestStop('npm is gone');
  }, PARENT_CHECK_MS).unref();
}

/**
 * A rejection or exception nobody handled: said in one line (the start had not finished)
 * or logged with its stack (it had), and everything is stopped; the exit code is 1.
 */
let failing = false;
async function fail(err: unknown): Promise<void> {
  if (failing) return;
  failing = true;
  if (platform) {
    logger.error('unexpected error: stopping', { error: err as Error });
    await platform.stop().catch(() => undefined);
  } else {
    console.error(`dpm: start-up failed: ${oneLine(err)}`);
    // The start under way stops what it started and rejects: main exits then.
    stopRequested.abort('error');
    return;
  }
  process.exit(1);
}
process.on('unhandledRejection', (reason) => void fail(reason));
process.on('uncaughtException', (err) => void fail(err));

/** An error as one line: its message, or its name and message when it is not one of ours. */
function oneLine(err: unknown): string {
  const text =
    err instanceof ConfigError || err instanceof StartupError
      ? err.message
      : err instanceof Error
        ? `${err.name}: ${err.message}`
        : String(err);
  return text.replace(/\s*\n\s*/g, ' ');
}

/**
 * `npm start` answers crews with the local stand-in model when no model is configured
 * (neither LLM_PROVIDER nor LLM_BASE_URL): every built-in crew then succeeds locally, with
 * replies labelled as the stand-in's. Only here: tests and AWS configure their own.
 */
function withStandInModel(env: NodeJS.ProcessEnv): Record<string, string | undefined> {
  const unset = (name: string) => (env[name] ?? '').trim() === '';
  return unset('LLM_PROVIDER') && unset('LLM_BASE_URL') ? { ...env, LLM_PROVIDER: 'local' } : env;
}

async function main(): Promise<void> {
  try {
    platform = await startPlatform(loadConfig(withStandInModel(process.env)), { signal: stopRequested.signal });
  } catch (err) {
    if (failing) process.exit(1);
    if (stopRequested.signal.aborted) {
      console.log(`\n${String(stopRequested.signal.reason)}: stopped during start-up`);
      process.exit(0);
    }
    console.error(`dpm: ${oneLine(err)}`);
    process.exit(1);
  }
  console.log(`Data Platform Management Service listening on ${platform.baseUrl}`);
  console.log(`  API reference: ${platform.baseUrl}/docs   OpenAPI: ${platform.baseUrl}/openapi.json`);
  // The NX1 SDK speaks HTTPS only (docs/sdk.md): the same API on the TLS port.
  console.log(`  HTTPS: ${platform.httpsBaseUrl}   certificate: ${platform.tls.certFile}`);
  if (platform.tls.created === 'none kept')
    console.log(`  made a self-signed certificate for 127.0.0.1, ::1 and localhost, kept for the next starts`);
  else if (platform.tls.created)
    console.log(
      `  made a new self-signed certificate (${platform.tls.created}): trust the new one where you trusted the old`,
    );
  console.log(`  stage: ${platform.config.stage}   data: ${platform.config.dataDir}`);
  const nodeNote = nodeVersionNote(process.versions.node);
  if (nodeNote) console.log(`  ${nodeNote}`);
  if (platform.identity) {
    const users = platform.config.localUsers.map((u) =>
      u.roles.length ? `${u.name} (${u.roles.join(', ')})` : u.name,
    );
    console.log(`  local sign-in: ${platform.identity.issuer} as ${users.join(', ')}`);
    console.log(`  a user's access token: npm run -s token -- <user>   (Authorization: Bearer <token>)`);
  } else {
    console.log(`  Bearer tokens from: ${platform.config.auth.issuer}`);
  }
  const { llm } = platform.config;
  if (llm.provider === 'local') {
    console.log(`  model: the local stand-in model (${llm.baseUrl}): replies start with ${STAND_IN_LABEL} and only`);
    console.log(`    state what they received; for real answers set LLM_PROVIDER=openai with LLM_BASE_URL`);
    console.log(`    (and LLM_API_KEY), or LLM_PROVIDER=bedrock with LLM_MODEL and AWS credentials`);
  } else if (llm.provider) {
    console.log(`  model: ${llm.provider} ${llm.model ?? '(its default model)'}`);
  }
  if (platform.requeuedRuns > 0) console.log(`  resumed ${platform.requeuedRuns} unfinished crew run(s)`);
  if (platform.requeuedDeliveries > 0)
    console.log(
      `  resumed ${platform.requeuedDeliveries} unfinished webhook deliver${platform.requeuedDeliveries === 1 ? 'y' : 'ies'}`,
    );
  if (platform.generatedAdminKey) {
    console.log(`  bootstrap admin key (shown once, keep it): ${platform.generatedAdminKey}`);
    console.log(`  use it as: curl -H 'Authorization-PSK: <key>' ${platform.baseUrl}/api/...`);
  }

  if (!stopRequested.signal.aborted) {
    await new Promise((resolve) => stopRequested.signal.addEventListener('abort', resolve, { once: true }));
  }
  if (!failing) console.log(`\n${String(stopRequested.signal.reason)}: stopping...`);
  // Running crew steps are abandoned (they run again after the next start), the work under
  // way drains, the emulators stop last.
  await platform.stop();
  process.exit(failing ? 1 : 0);
}

void main();
