import { describe, expect, it } from 'vitest';
import { MAX_INPUT_BYTES } from '../../functions/crews/limits.js';
import { isSecretHeader, MASKED, renderStep, shownInput } from '../../functions/crews/worker/step-input.js';
import { jsonBytes } from '../../shared/json.js';

const ctx = { values: { token: 'tok-123', who: 'Ada' }, outputs: { a: { n: 1 } } };

describe('a step input as step.started shows it', () => {
  it('renders a render and an llm step with the values and earlier outputs', () => {
    expect(shownInput(renderStep({ id: 'r', kind: 'render', template: 'Hi {{who}} {{steps.a.output}}' }, ctx))).toEqual(
      {
        text: 'Hi Ada {"n":1}',
      },
    );
    expect(shownInput(renderStep({ id: 'l', kind: 'llm', prompt: 'Q {{who}}', system: 'S {{who}}' }, ctx))).toEqual({
      text: 'Q Ada',
      system: 'S Ada',
    });
    expect(shownInput(renderStep({ id: 'l', kind: 'llm', prompt: 'Q' }, ctx))).toEqual({ text: 'Q' });
  });

  it('masks the values of headers named like secrets, and credentials in the URL, but sends them whole', () => {
    const step = {
      id: 'h',
      kind: 'http' as const,
      method: 'POST' as const,
      url: 'http://user:pw@127.0.0.1:9/orders?api_key={{token}}',
      headers: {
        Authorization: 'Bearer {{token}}',
        'X-Api-Key': '{{token}}',
        'X-Auth-Token': '{{token}}',
        Cookie: 'session={{token}}',
        'X-Hub-Signature': 'sha256=x',
        'Content-Type': 'application/json',
        'X-Request-For': '{{who}}',
      },
      body: '{"who": "{{who}}"}',
    };
    const sent = renderStep(step, ctx);
    expect(sent).toMatchObject({ url: 'http://user:pw@127.0.0.1:9/orders?api_key=tok-123' });
    expect(sent.kind === 'http' && sent.headers.Authorization).toBe('Bearer tok-123');
    const shown = shownInput(sent);
    expect(shown).toEqual({
      method: 'POST',
      url: 'http://***@127.0.0.1:9/orders?***',
      headers: {
        Authorization: MASKED,
        'X-Api-Key': MASKED,
        'X-Auth-Token': MASKED,
        Cookie: MASKED,
        'X-Hub-Signature': MASKED,
        'Content-Type': 'application/json',
        'X-Request-For': 'Ada',
      },
      body: '{"who": "Ada"}',
    });
    expect(JSON.stringify(shown)).not.toContain('tok-123');
  });

  it('keeps a header named __proto__ as a header, not a prototype', () => {
    const shown = shownInput(
      renderStep(
        { id: 'h', kind: 'http', method: 'GET', url: 'http://127.0.0.1:9/', headers: { ['__proto__']: 'x' } },
        ctx,
      ),
    );
    expect(Object.getOwnPropertyNames(shown.headers)).toEqual(['__proto__']);
  });

  it.each(['authorization', 'Proxy-Authorization', 'x-amz-security-token', 'X-Session-Id', 'password', 'apikey'])(
    'counts %s as a secret header',
    (name) => expect(isSecretHeader(name)).toBe(true),
  );
  it.each(['Content-Type', 'Accept', 'X-Request-Id', 'User-Agent'])('shows %s', (name) =>
    expect(isSecretHeader(name)).toBe(false),
  );

  it('shows a wait step its seconds and an approval its prompt', () => {
    expect(shownInput(renderStep({ id: 'w', kind: 'wait', seconds: 2.5 }, ctx))).toEqual({ seconds: 2.5 });
    expect(
      shownInput(
        renderStep({ id: 'p', kind: 'approval', prompt: 'OK {{who}}?', role: 'approver', timeout_seconds: 60 }, ctx),
      ),
    ).toEqual({ prompt: 'OK Ada?' });
  });

  it('cuts a text over 64 KiB with a note of its size', () => {
    const big = 'x'.repeat(100_000);
    const shown = shownInput(renderStep({ id: 'r', kind: 'render', template: big }, ctx)) as { text: string };
    expect(jsonBytes(shown.text)).toBeLessThanOrEqual(MAX_INPUT_BYTES);
    expect(shown.text).toMatch(/…\[truncated: 100002 bytes as JSON, over the limit of 65536\]$/);
  });
});
