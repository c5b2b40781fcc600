/**
 * `npm run token -- <user>`: prints one line, an access token of the local user `<user>`
 * from the running service's local identity provider (same HOST and PORT as `npm start`),
 * to paste into `Authorization: Bearer ...`.
 *
 * Plain JavaScript run by node directly: no compile and nothing but node's own modules to
 * load, so it answers in well under a second. It reads the three settings it needs as
 * shared/config.ts does (HOST, PORT, AUTH_ISSUER; blank counts as unset).
 */
import { BlockList, isIP } from 'node:net';
import { localUserToken, SignInError } from './local-sign-in.mjs';

/** @param {string} name */
const setting = (name) => {
  const value = (process.env[name] ?? '').trim();
  return value === '' ? undefined : value;
};

/** A host only this machine reaches, as shared/config.ts isLoopbackHost: `localhost`, 127.0.0.0/8, ::1. */
const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');
/** @param {string} host */
const isLoopbackHost = (host) =>
  host.toLowerCase() === 'localhost' || (isIP(host) !== 0 && LOOPBACK.check(host, isIP(host) === 6 ? 'ipv6' : 'ipv4'));

/** @param {string} message */
function fail(message, code = 1) {
  console.error(`dpm: ${message}`);
  process.exit(code);
}

const [user, ...extra] = process.argv.slice(2);
if (!user || extra.length > 0) {
  console.error('usage: npm run token -- <user>   (a user of DPM_LOCAL_USERS, e.g. alice)');
  process.exit(2);
}
const issuer = setting('AUTH_ISSUER');
if (issuer) fail(`AUTH_ISSUER is set (${issuer}): get tokens from that issuer`);
const host = setting('HOST') ?? '127.0.0.1';
// The local sign-in serves loopback only (shared/config.ts checkLocalSignIn).
if (!isLoopbackHost(host)) fail(`HOST ${host} is not a loopback address: the local sign-in serves loopback only`);
const portText = setting('PORT') ?? '3000';
const port = Number(portText);
if (!/^\d+$/.test(portText) || port < 1 || port > 65535)
  fail(`invalid configuration: PORT must be the port number the service listens on (not ${portText})`);

try {
  console.log(await localUserToken(`http://${host.includes(':') ? `[${host}]` : host}:${port}`, user));
} catch (err) {
  if (err instanceof SignInError) fail(err.message);
  throw err;
}
