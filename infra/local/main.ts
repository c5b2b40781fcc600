/** `npm start`: the whole service on this machine, on embedded defaults. */
import { ConfigError, loadConfig } from '../../shared/config.js';
import { StartupError } from './startup-error.js';
import { type RunningPlatform, startPlatform } from './platform.js';

// The SDK's notice about future Node versions is noise for a local run.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

async function main(): Promise<void> {
  let platform: RunningPlatform;
  try {
    platform = await startPlatform(loadConfig());
  } catch (err) {
    if (err instanceof ConfigError || err instanceof StartupError) {
      console.error(`dpm: ${err.message}`);
      process.exit(1);
    }
    throw err;
  }
  console.log(`Data Platform Management Service listening on ${platform.baseUrl}`);
  console.log(`  API reference: ${platform.baseUrl}/docs   OpenAPI: ${platform.baseUrl}/openapi.json`);
  console.log(`  stage: ${platform.config.stage}   data: ${platform.config.dataDir}`);
  if (platform.identity) {
    const users = platform.config.localUsers.map((u) =>
      u.roles.length ? `${u.name} (${u.roles.join(', ')})` : u.name,
    );
    console.log(`  local sign-in: ${platform.identity.issuer} as ${users.join(', ')}`);
    console.log(`  a user's access token: npm run -s token -- <user>   (Authorization: Bearer <token>)`);
  } else {
    console.log(`  Bearer tokens from: ${platform.config.auth.issuer}`);
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

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) process.exit(1);
    stopping = true;
    console.log(`\n${signal}: stopping...`);
    await platform.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
}

void main();
