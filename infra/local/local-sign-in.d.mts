/** The types of local-sign-in.mjs (plain JavaScript, run by `npm run token` with no compile). */
export declare const OIDC_PATH: '/oidc';
export declare const CLI_CLIENT_ID: 'dpm-cli';
export declare const CLI_REDIRECT_URI: 'http://127.0.0.1/dpm-cli-callback';
export declare class SignInError extends Error {}
/** An access token for the local user `user` from the provider at `<baseUrl>/oidc`. */
export declare function localUserToken(baseUrl: string, user: string): Promise<string>;
