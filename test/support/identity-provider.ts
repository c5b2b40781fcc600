import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK } from 'jose';

/**
 * A local OIDC issuer for tests: serves the discovery document and the JWKS; the test
 * side mints tokens with the private key (test/support/tokens.ts).
 */
export interface TestIssuer {
  readonly issuer: string;
  readonly privateJwk: JWK;
  stop(): Promise<void>;
}

export async function startTestIssuer(): Promise<TestIssuer> {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
  const kid = 'test-key-1';
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: 'RS256' };
  let issuer = '';
  const server: Server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (req.url === '/realms/test/.well-known/openid-configuration') {
      res.end(JSON.stringify({ issuer, jwks_uri: `${issuer}/protocol/openid-connect/certs` }));
    } else if (req.url === '/realms/test/protocol/openid-connect/certs') {
      res.end(JSON.stringify({ keys: [publicJwk] }));
    } else {
      res.statusCode = 404;
      res.end('{}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}/realms/test`;
  return {
    issuer,
    privateJwk,
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
