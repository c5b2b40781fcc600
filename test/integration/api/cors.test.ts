import { describe, expect, it } from 'vitest';
import { adminPsk, baseUrl } from '../helpers.js';

/**
 * CORS (CORS_ORIGINS locally, the stage's `corsOrigins` on AWS): a browser portal on a
 * listed origin may call the API with either credential; any other origin gets no CORS
 * headers, so its browser refuses the answer. The suite's platform lists
 * https://portal.example.com.
 */

const PORTAL = 'https://portal.example.com';

const preflight = (origin: string, method = 'POST') =>
  fetch(`${baseUrl()}/api/crew-templates`, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': method,
      'access-control-request-headers': 'authorization-psk, content-type',
    },
  });

describe('CORS', () => {
  it('answers a listed origin’s preflight with the methods and headers the API takes', async () => {
    const res = await preflight(PORTAL);
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe(PORTAL);
    expect(res.headers.get('access-control-allow-methods')?.split(',')).toEqual(
      expect.arrayContaining(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']),
    );
    expect(res.headers.get('access-control-allow-headers')?.split(',')).toEqual(
      expect.arrayContaining(['authorization', 'authorization-psk', 'content-type']),
    );
    expect(res.headers.get('access-control-max-age')).toBe('600');
  });

  it('gives another origin no CORS headers (its preflight is an OPTIONS like any other: 405)', async () => {
    const res = await preflight('https://evil.example.com');
    expect(res.status).toBe(405);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    const read = await fetch(`${baseUrl()}/api/crew-templates`, {
      headers: { origin: 'https://evil.example.com', 'authorization-psk': adminPsk() },
    });
    expect(read.status).toBe(200);
    expect(read.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('marks a listed origin’s answers readable, the next-page cursor included, errors too', async () => {
    const read = await fetch(`${baseUrl()}/api/crew-templates?limit=1`, {
      headers: { origin: PORTAL, 'authorization-psk': adminPsk() },
    });
    expect(read.status).toBe(200);
    expect(read.headers.get('access-control-allow-origin')).toBe(PORTAL);
    expect(read.headers.get('access-control-expose-headers')).toContain('x-next-cursor');
    const refused = await fetch(`${baseUrl()}/api/crew-templates`, { headers: { origin: PORTAL } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe(PORTAL);
  });
});
