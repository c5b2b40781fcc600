/**
 * `npm run token -- <user>`: prints one line, an access token of the local user `<user>`
 * from the running service's local identity provider (same HOST and PORT as `npm start`),
 * to paste into `Authorization: Bearer ...`.
 */
import { ConfigError, loadConfig } from '../../shared/config.js';
import { localUserToken, SignInError } from './local-sign-in.js';
import { urlHost } from './hosts.js';

async function main(): Promise<void> {
  const user = process.argv[2];
  if (!user || process.argv.length > 3) {
    console.error('usage: npm run token -- <user>   (a user of DPM_LOCAL_USERS, e.g. alice)');
    process.exit(2);
  }
  try {
    const config = loadConfig();
    if (config.auth.issuer) {
      throw new SignInError(`AUTH_ISSUER is set (${config.auth.issuer}): get tokens from that issuer`);
    }
    console.log(await localUserToken(`http://${urlHost(config.host)}:${config.port}`, user));
  } catch (err) {
    if (err instanceof SignInError || err instanceof ConfigError) {
      console.error(`dpm: ${err.message}`);
      process.exit(1);
    }
    throw err;
  }
}

void main();
