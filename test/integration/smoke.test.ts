import { describe, expect, it } from 'vitest';
import { api, token } from './helpers.js';

describe('smoke', () => {
  it('pings and authenticates', async () => {
    expect((await api('/api/health/ping')).status).toBe(200);
    const t = await token('alice');
    const res = await api('/api/decisions/ws/k/versions', { token: t });
    expect(res.status).toBe(404);
  });
});
