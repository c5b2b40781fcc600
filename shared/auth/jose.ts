/**
 * What JwtVerifier uses of jose, imported by name: JwtVerifier loads this module with the
 * first Bearer token (a dynamic import of 'jose' itself would bundle all of jose).
 */
export { createRemoteJWKSet, customFetch, errors, jwtVerify } from 'jose';
