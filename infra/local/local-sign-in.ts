/**
 * Signing in to the local identity provider without a browser (authorization code + PKCE, by
 * the public `dpm-cli` client), for tests and scripts written in TypeScript. The code is plain
 * JavaScript, local-sign-in.mjs, so that `npm run token` runs it with node directly.
 */
export { localUserToken, SignInError } from './local-sign-in.mjs';
