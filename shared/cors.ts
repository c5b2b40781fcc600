/**
 * Cross-origin calls from a browser portal on another origin (the `corsOrigins` stage
 * setting on AWS, CORS_ORIGINS locally; default none, so no browser on another origin may
 * call the API). The same rules on both: API Gateway answers the preflight on AWS, the
 * local platform's root app does it locally.
 */
export const CORS = {
  allowMethods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
  /** What the API reads: both credentials and JSON bodies. */
  allowHeaders: ['authorization', 'authorization-psk', 'content-type'],
  /** What a portal needs to read from answers: the next page of a list. */
  exposeHeaders: ['x-next-cursor'],
  /** How long a browser may keep a preflight answer. */
  maxAgeSeconds: 600,
} as const;

/** An origin: scheme, host and optional port, nothing else (`https://portal.example.com`). */
export const ORIGIN = /^https?:\/\/[a-z0-9.-]+(:\d{1,5})?$/i;

/** `https://A.example, ,http://b:8080` → `['https://a.example', 'http://b:8080']`; undefined names the bad one. */
export function originList(text: string | undefined): { origins: string[]; bad?: string } {
  const origins = (text ?? '')
    .split(',')
    .map((o) => o.trim().toLowerCase())
    .filter((o) => o !== '');
  const bad = origins.find((o) => !ORIGIN.test(o));
  return bad === undefined ? { origins } : { origins, bad };
}
