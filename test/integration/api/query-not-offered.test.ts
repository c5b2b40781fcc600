import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { adminPsk, api, token } from '../helpers.js';

/**
 * The NX1 SDK's saved queries (docs/sdk.md: "Not here (HTTP 404)"): `queries.create_from_suggestion`
 * (POST /api/query), `get_queries` (GET /api/query) and `delete_query` (DELETE /api/query/{id}) are
 * answered 404 with an ErrorResponse that says saved queries are not offered, and what to use instead.
 */
describe('saved queries: not offered, and said so', () => {
  it('answers create-from-suggestion (POST /api/query) 404: no saved queries; ask, or the suggestion’s SQL', async () => {
    for (const credentials of [{ psk: adminPsk() }, { token: await token('saved-query-user') }]) {
      const res = await api('/api/query', { method: 'POST', ...credentials, body: { suggestion_id: 'sug-1' } });
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(Object.keys(res.body).sort()).toEqual(['code', 'error']);
      expect(res.body.code).toBe(404);
      expect(res.body.error).toMatch(/^Saved queries are not offered by this service: /);
      expect(res.body.error).toContain('POST /api/query/ask');
      expect(res.body.error).toContain("suggestion's own SQL");
    }
  });

  it('answers the list and the delete of saved queries 404 the same way', async () => {
    const list = await api('/api/query?limit=20', { psk: adminPsk() });
    expect(list.status).toBe(404);
    expect(list.body).toEqual({
      error: expect.stringMatching(/^Saved queries are not offered by this service: /),
      code: 404,
    });
    const removed = await api(`/api/query/${randomUUID()}`, { method: 'DELETE', psk: adminPsk() });
    expect(removed.status).toBe(404);
    expect(removed.body).toEqual({
      error: expect.stringMatching(/^Saved queries are not offered by this service: /),
      code: 404,
    });
  });

  it('leaves other answers alone: a wrong method on an offered path is still 405, an unknown path a plain 404', async () => {
    const wrongMethod = await api('/api/query/ask', { method: 'DELETE', psk: adminPsk() });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('POST');
    const unknown = await api('/api/query/no/such/path', { method: 'POST', psk: adminPsk(), body: {} });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: 'Not Found', code: 404 });
  });
});
