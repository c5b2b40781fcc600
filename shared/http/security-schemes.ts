/** The OpenAPI security schemes (docs/identity-and-keys.md, the two kinds of credentials), named as FastAPI names them. */
export const OAUTH2_SCHEME = 'OAuth2AuthorizationCodeBearer';
export const PSK_SCHEME = 'APIKeyHeader';

export const SECURITY_SCHEMES = {
  [OAUTH2_SCHEME]: {
    type: 'oauth2',
    description:
      "An identity-provider session: OAuth 2.0 authorization code (with PKCE), the access token sent as `Authorization: Bearer <token>`. The URLs are the configured issuer's (its OIDC discovery); locally, the built-in provider at /oidc.",
    // Placeholders of the local provider's paths: /openapi.json serves the issuer's own.
    flows: { authorizationCode: { authorizationUrl: '/oidc/auth', tokenUrl: '/oidc/token', scopes: {} } },
  },
  [PSK_SCHEME]: {
    type: 'apiKey',
    in: 'header',
    name: 'Authorization-PSK',
    description: 'A pre-shared key (made with POST /api/dataproduct/{dataproduct_id}/psk); never a session',
  },
};
