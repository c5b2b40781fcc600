import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { isForbiddenAddress } from '../../shared/adapters/address-guard.js';
import { type HttpRequester, OutboundHttp } from '../../shared/adapters/outbound-http.js';
import { Invalid, type ValidationIssue } from '../../shared/errors.js';
import type { ChatModel } from '../../shared/ports/llm.js';
import { type Step, TemplateRequest, type Variable } from '../../functions/crews/templates/template-schemas.js';
import { declarationIssues, resolveValues } from '../../functions/crews/templates/declaration.js';
import {
  boundOutputs,
  capJson,
  fittingPage,
  MAX_ERROR_BYTES,
  MAX_EVENT_DATA_BYTES,
  MAX_OUTPUT_BYTES,
} from '../../functions/crews/limits.js';
import { StepExecutor } from '../../functions/crews/worker/steps.js';
import { jsonBytes } from '../../shared/json.js';
import { references, render } from '../../functions/crews/templates/templating.js';

/** A template request as the HTTP layer hands it over (zod defaults filled in). */
const declaration = (body: { variables?: unknown[]; steps: unknown[] }) =>
  TemplateRequest.parse({ name: 'unit', ...body });

const renderStep = (id: string, template: string) => ({ id, kind: 'render', template });

/** The issues of resolveValues, or [] when it accepted the values. */
function valueIssues(variables: Variable[], values: Record<string, unknown>): ValidationIssue[] {
  try {
    resolveValues(variables, values);
    return [];
  } catch (err) {
    expect(err).toBeInstanceOf(Invalid);
    return (err as Invalid).issues;
  }
}

const variable = (name: string, type: Variable['type'], over: Partial<Variable> = {}): Variable => ({
  name,
  type,
  required: false,
  ...over,
});

describe('references()', () => {
  it('finds variables, step outputs and invalid placeholders, in order', () => {
    expect(references('Hi {{name}}, see {{ steps.fetch-1.output }} and {{a b}} then {{_x9}}')).toEqual([
      { kind: 'variable', name: 'name' },
      { kind: 'step', id: 'fetch-1' },
      { kind: 'invalid', text: 'a b' },
      { kind: 'variable', name: '_x9' },
    ]);
  });

  it('treats malformed step references and empty placeholders as invalid', () => {
    expect(references('{{steps.A.output}}')).toEqual([{ kind: 'invalid', text: 'steps.A.output' }]);
    expect(references('{{steps.a}}')).toEqual([{ kind: 'invalid', text: 'steps.a' }]);
    expect(references('{{steps.a.result}}')).toEqual([{ kind: 'invalid', text: 'steps.a.result' }]);
    expect(references('{{9lives}}')).toEqual([{ kind: 'invalid', text: '9lives' }]);
    expect(references('{{}}')).toEqual([{ kind: 'invalid', text: '' }]);
  });

  it('finds nothing in text without placeholders', () => {
    expect(references('plain {text} with { braces } and }} {{')).toEqual([]);
  });
});

describe('render()', () => {
  const ctx = {
    values: { name: 'Ada', n: 3, flag: false, nothing: null, obj: { a: [1, 'x'] }, list: [1, 2] },
    outputs: { first: 'one', json: { status: 200, body: { ok: true } }, empty: null },
  };

  it('replaces variables and earlier step outputs', () => {
    expect(render('Hello {{name}} / {{ name }} -> {{steps.first.output}}', ctx)).toBe('Hello Ada / Ada -> one');
  });

  it('renders null as nothing and other non-strings as JSON', () => {
    expect(render('[{{nothing}}][{{steps.empty.output}}]', ctx)).toBe('[][]');
    expect(render('{{n}} {{flag}} {{obj}} {{list}}', ctx)).toBe('3 false {"a":[1,"x"]} [1,2]');
    expect(render('{{steps.json.output}}', ctx)).toBe('{"status":200,"body":{"ok":true}}');
  });

  it('leaves unknown placeholders as they are', () => {
    expect(render('{{unknown}} {{steps.nope.output}} {{a b}} {{constructor}} {{toString}}', ctx)).toBe(
      '{{unknown}} {{steps.nope.output}} {{a b}} {{constructor}} {{toString}}',
    );
  });

  it('does not render placeholders that come from a value, nor interpret $ patterns', () => {
    const c = { values: { x: '{{y}}', y: 'Y', d: "$& $1 $$ $'" }, outputs: {} };
    expect(render('{{x}}|{{d}}', c)).toBe("{{y}}|$& $1 $$ $'");
  });

  it('property: with only variable placeholders and string values, equals manual substitution', () => {
    const names = ['a', 'b_1', 'Name', '_x'] as const;
    const literal = fc.string({ maxLength: 12 }).filter((s) => !s.includes('{') && !s.includes('}'));
    const segment = fc.oneof(
      literal.map((text) => ({ text })),
      fc.record({ name: fc.constantFrom(...names), spaces: fc.boolean() }),
    );
    fc.assert(
      fc.property(
        fc.array(segment, { maxLength: 12 }),
        fc.record({ a: fc.string(), b_1: fc.string(), Name: fc.string(), _x: fc.string() }),
        (segments, values) => {
          const template = segments
            .map((s) => ('text' in s ? s.text : s.spaces ? `{{ ${s.name} }}` : `{{${s.name}}}`))
            .join('');
          const expected = segments.map((s) => ('text' in s ? s.text : values[s.name])).join('');
          expect(render(template, { values, outputs: {} })).toBe(expected);
        },
      ),
    );
  });
});

describe('declarationIssues()', () => {
  it('accepts a valid declaration', () => {
    const req = declaration({
      variables: [
        { name: 'topic', required: true },
        { name: 'n', type: 'integer', default: 2 },
      ],
      steps: [
        renderStep('a', 'About {{topic}} x{{n}}'),
        {
          id: 'b',
          kind: 'http',
          method: 'POST',
          url: 'http://h/{{topic}}',
          headers: { 'X-A': '{{steps.a.output}}' },
          body: '{{n}}',
        },
        { id: 'c', kind: 'llm', prompt: '{{steps.b.output}}', system: '{{topic}}' },
        { id: 'd', kind: 'wait', seconds: 0 },
      ],
    });
    expect(declarationIssues(req)).toEqual([]);
  });

  it('reports a duplicate variable name at the second occurrence', () => {
    const req = declaration({
      variables: [{ name: 'x' }, { name: 'x', type: 'integer' }],
      steps: [renderStep('a', 'hi')],
    });
    expect(declarationIssues(req)).toEqual([
      {
        type: 'value_error',
        loc: ['body', 'variables', 1, 'name'],
        msg: "Value error, duplicate variable name 'x'",
        input: 'x',
        ctx: { error: "duplicate variable name 'x'" },
      },
    ]);
  });

  it.each([
    ['string', 5, 'string_type'],
    ['integer', 1.5, 'int_from_float'],
    ['integer', '1', 'int_type'],
    ['integer', true, 'int_type'],
    ['number', '1.5', 'float_type'],
    ['boolean', 'true', 'bool_type'],
    ['boolean', 0, 'bool_type'],
    ['object', [1], 'dict_type'],
    ['object', null, 'dict_type'],
    ['array', { a: 1 }, 'list_type'],
    ['array', 'x', 'list_type'],
  ] as const)('reports a %s default %j as %s', (type, value, expected) => {
    const req = declaration({
      variables: [
        { name: 'ok', type: 'string', default: 'fine' },
        { name: 'v', type, default: value },
      ],
      steps: [renderStep('a', 'x')],
    });
    const issues = declarationIssues(req);
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatchObject({ type: expected, loc: ['body', 'variables', 1, 'default'], input: value });
    expect(issues[0]!.msg).toEqual(expect.any(String));
  });

  it.each([
    ['string', 'text'],
    ['integer', 7],
    ['integer', 2.0],
    ['number', 1.25],
    ['number', 3],
    ['boolean', false],
    ['object', {}],
    ['array', []],
  ] as const)('accepts a %s default %j', (type, value) => {
    const req = declaration({ variables: [{ name: 'v', type, default: value }], steps: [renderStep('a', 'x')] });
    expect(declarationIssues(req)).toEqual([]);
  });

  it('reports a duplicate step id at the second occurrence', () => {
    const req = declaration({ steps: [renderStep('a', 'x'), renderStep('b', 'y'), renderStep('a', 'z')] });
    expect(declarationIssues(req)).toEqual([
      {
        type: 'value_error',
        loc: ['body', 'steps', 2, 'id'],
        msg: "Value error, duplicate step id 'a'",
        input: 'a',
        ctx: { error: "duplicate step id 'a'" },
      },
    ]);
  });

  it('reports a reference to an unknown variable with the field it is in', () => {
    const req = declaration({
      variables: [{ name: 'known' }],
      steps: [renderStep('a', 'x'), renderStep('b', '{{known}} {{ghost}}')],
    });
    expect(declarationIssues(req)).toEqual([
      {
        type: 'value_error',
        loc: ['body', 'steps', 1, 'template'],
        msg: "Value error, reference to unknown variable 'ghost'",
        input: '{{known}} {{ghost}}',
        ctx: { error: "reference to unknown variable 'ghost'" },
      },
    ]);
  });

  it('reports a reference to a later step, to the step itself, and to an unknown step', () => {
    const req = declaration({
      steps: [
        renderStep('a', '{{steps.b.output}}'),
        renderStep('b', '{{steps.b.output}}'),
        renderStep('c', '{{steps.zz.output}}'),
      ],
    });
    const issues = declarationIssues(req);
    expect(issues).toHaveLength(3);
    expect(issues[0]).toMatchObject({
      type: 'value_error',
      loc: ['body', 'steps', 0, 'template'],
      input: '{{steps.b.output}}',
      ctx: { error: "reference to a later step 'b'" },
    });
    expect(issues[1]).toMatchObject({ type: 'value_error', loc: ['body', 'steps', 1, 'template'] });
    expect(issues[2]).toMatchObject({
      type: 'value_error',
      loc: ['body', 'steps', 2, 'template'],
      input: '{{steps.zz.output}}',
      ctx: { error: "reference to an unknown step 'zz'" },
    });
  });

  it('reports an invalid placeholder', () => {
    const req = declaration({ steps: [renderStep('a', 'ok'), renderStep('b', 'x {{ not valid }}')] });
    expect(declarationIssues(req)).toEqual([
      {
        type: 'value_error',
        loc: ['body', 'steps', 1, 'template'],
        msg: "Value error, unknown placeholder '{{not valid}}'",
        input: 'x {{ not valid }}',
        ctx: { error: "unknown placeholder '{{not valid}}'" },
      },
    ]);
  });

  it('checks every rendered field of http and llm steps with its own loc', () => {
    const req = declaration({
      steps: [
        renderStep('a', 'x'),
        {
          id: 'h',
          kind: 'http',
          method: 'POST',
          url: 'http://x/{{u}}',
          headers: { 'X-Token': '{{t}}' },
          body: '{{b}}',
        },
        { id: 'l', kind: 'llm', prompt: '{{p}}', system: '{{s}}' },
      ],
    });
    const locs = declarationIssues(req).map((i) => i.loc);
    expect(locs).toEqual(
      expect.arrayContaining([
        ['body', 'steps', 1, 'url'],
        ['body', 'steps', 1, 'body'],
        ['body', 'steps', 1, 'headers', 'X-Token'],
        ['body', 'steps', 2, 'prompt'],
        ['body', 'steps', 2, 'system'],
      ]),
    );
    expect(locs).toHaveLength(5);
  });

  // A dot is a valid HTTP token character: the header name stays one loc element.
  it('keeps a header name containing a dot as one loc element', () => {
    const req = declaration({
      steps: [{ id: 'h', kind: 'http', method: 'GET', url: 'http://x/', headers: { 'X.Trace': '{{ghost}}' } }],
    });
    expect(declarationIssues(req).map((i) => i.loc)).toEqual([['body', 'steps', 0, 'headers', 'X.Trace']]);
  });

  it('lists every problem of one declaration together', () => {
    const req = declaration({
      variables: [{ name: 'x', type: 'integer', default: 'no' }, { name: 'x' }],
      steps: [renderStep('a', '{{y}}'), renderStep('a', '{{steps.q.output}}')],
    });
    expect(declarationIssues(req).map((i) => [i.type, i.loc])).toEqual([
      ['int_type', ['body', 'variables', 0, 'default']],
      ['value_error', ['body', 'variables', 1, 'name']],
      ['value_error', ['body', 'steps', 0, 'template']],
      ['value_error', ['body', 'steps', 1, 'id']],
      ['value_error', ['body', 'steps', 1, 'template']],
    ]);
  });
});

describe('resolveValues()', () => {
  it('fills defaults, keeps given values and sets optional variables without default to null', () => {
    const vars = [
      variable('name', 'string', { required: true }),
      variable('count', 'integer', { default: 3 }),
      variable('ratio', 'number', { default: 0.5 }),
      variable('on', 'boolean', { required: true, default: true }),
      variable('opts', 'object'),
      variable('tags', 'array', { default: ['a'] }),
    ];
    expect(resolveValues(vars, { name: 'x', ratio: 2 })).toEqual({
      name: 'x',
      count: 3,
      ratio: 2,
      on: true,
      opts: null,
      tags: ['a'],
    });
  });

  it('reports a missing required variable at body.values.<name> with the values object as input', () => {
    const values = { other: 'v' };
    expect(valueIssues([variable('need', 'string', { required: true }), variable('other', 'string')], values)).toEqual([
      { type: 'missing', loc: ['body', 'values', 'need'], msg: 'Field required', input: values },
    ]);
  });

  it('reports an unknown name as extra_forbidden', () => {
    expect(valueIssues([variable('a', 'string')], { a: 'x', zzz: 5 })).toEqual([
      { type: 'extra_forbidden', loc: ['body', 'values', 'zzz'], msg: 'Extra inputs are not permitted', input: 5 },
    ]);
  });

  it.each([
    ['string', 5, 'string_type'],
    ['string', null, 'string_type'],
    ['integer', 2.5, 'int_from_float'],
    // pydantic's lax mode reads strings it can; what it cannot read is *_parsing.
    ['integer', 'two', 'int_parsing'],
    ['integer', '2.5', 'int_parsing'],
    ['integer', [], 'int_type'],
    ['number', 'x', 'float_parsing'],
    ['number', {}, 'float_type'],
    ['boolean', 'maybe', 'bool_parsing'],
    ['boolean', 2, 'bool_parsing'],
    ['boolean', [], 'bool_type'],
    ['object', [], 'dict_type'],
    ['object', 'x', 'dict_type'],
    ['array', {}, 'list_type'],
    ['array', 'a,b', 'list_type'],
  ] as const)('reports a %s given %j as %s', (type, value, expected) => {
    const issues = valueIssues([variable('v', type)], { v: value });
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatchObject({ type: expected, loc: ['body', 'values', 'v'], input: value });
  });

  it.each([
    ['string', ''],
    ['integer', -4],
    ['number', 2.5],
    ['number', 7],
    ['boolean', true],
    ['object', { a: { b: 1 } }],
    ['array', [1, 'x']],
  ] as const)('accepts a %s given %j', (type, value) => {
    expect(resolveValues([variable('v', type)], { v: value })).toEqual({ v: value });
  });

  it.each([
    ['integer', '2', 2],
    ['integer', ' 7 ', 7],
    ['integer', 3.0, 3],
    ['integer', false, 0],
    ['number', '2.5', 2.5],
    ['boolean', 'yes', true],
    ['boolean', 'OFF', false],
    ['boolean', 1, true],
  ] as const)('converts a %s given %j to %j, as pydantic (lax) does', (type, value, expected) => {
    expect(resolveValues([variable('v', type)], { v: value })).toEqual({ v: expected });
  });

  it('lists all problems together', () => {
    const values = { i: 1.5, b: 'nope', extra1: 1, extra2: 2 };
    const issues = valueIssues(
      [variable('i', 'integer'), variable('b', 'boolean'), variable('req', 'string', { required: true })],
      values,
    );
    expect(issues.map((i) => [i.type, i.loc])).toEqual(
      expect.arrayContaining([
        ['int_from_float', ['body', 'values', 'i']],
        ['bool_parsing', ['body', 'values', 'b']],
        ['missing', ['body', 'values', 'req']],
        ['extra_forbidden', ['body', 'values', 'extra1']],
        ['extra_forbidden', ['body', 'values', 'extra2']],
      ]),
    );
    expect(issues).toHaveLength(5);
  });
});

describe('isForbiddenAddress()', () => {
  it.each([
    '169.254.169.254',
    '169.254.0.1',
    'fe80::1',
    'FE80::abcd',
    'febf::1',
    '::ffff:169.254.169.254',
    'fd00:ec2::254',
    '100.100.100.200',
    '64:ff9b::a9fe:a9fe',
  ])('refuses %s', (address) => {
    expect(isForbiddenAddress(address)).toBe(true);
  });

  it.each(['127.0.0.1', '10.0.0.1', '192.168.1.1', '8.8.8.8', '::1', '2001:db8::1', 'fec0::1', '169.255.0.1'])(
    'allows %s',
    (address) => {
      expect(isForbiddenAddress(address)).toBe(false);
    },
  );

  // WHATWG URL parsing writes `http://[::ffff:169.254.169.254]/` as host `[::ffff:a9fe:a9fe]`.
  it('refuses the IPv4-mapped metadata address in hex notation', () => {
    expect(new URL('http://[::ffff:169.254.169.254]/').hostname).toBe('[::ffff:a9fe:a9fe]');
    expect(isForbiddenAddress('::ffff:a9fe:a9fe')).toBe(true);
  });
});

describe('OutboundHttp', () => {
  let server: Server;
  let port: number;
  const hits: IncomingMessage[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      hits.push(req);
      res.end('hit');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  afterEach(() => vi.restoreAllMocks());

  it('refuses a host that is not in the allow-list without any network call', async () => {
    const fetchSpy = vi.spyOn(globalThis, 'fetch');
    const http = new OutboundHttp(['example.com', 'localhost']);
    const before = hits.length;
    await expect(
      http.request({ method: 'GET', url: `http://127.0.0.1:${port}/x` }, AbortSignal.timeout(5000)),
    ).rejects.toThrow(/not in CREW_HTTP_ALLOWED_HOSTS/);
    expect(fetchSpy).not.toHaveBeenCalled();
    expect(hits.length).toBe(before);
  });

  it('refuses an allowed metadata address without any network call', async () => {
    const fetchSpy = vi.spyOn(globalThis, 'fetch');
    const http = new OutboundHttp(['169.254.169.254', '100.100.100.200']);
    await expect(
      http.request({ method: 'GET', url: 'http://169.254.169.254/latest/meta-data/' }, AbortSignal.timeout(5000)),
    ).rejects.toThrow(/link-local or metadata/);
    await expect(
      http.request({ method: 'GET', url: 'http://100.100.100.200/' }, AbortSignal.timeout(5000)),
    ).rejects.toThrow(/link-local or metadata/);
    expect(fetchSpy).not.toHaveBeenCalled();
  });

  it('refuses URLs that are not http(s)', async () => {
    const http = new OutboundHttp(['127.0.0.1']);
    await expect(http.request({ method: 'GET', url: 'file:///etc/passwd' }, AbortSignal.timeout(5000))).rejects.toThrow(
      /only http and https/,
    );
    await expect(http.request({ method: 'GET', url: 'not a url' }, AbortSignal.timeout(5000))).rejects.toThrow(
      /not a URL/,
    );
  });

  it('does not quote the credentials of a URL it cannot use', async () => {
    const http = new OutboundHttp(['127.0.0.1']);
    const refused = http.request(
      { method: 'GET', url: 'http://ada:pw-9@not allowed/?api_key=k-9' },
      AbortSignal.timeout(5000),
    );
    await expect(refused).rejects.toThrow('not a URL: http://***@not allowed/?***');
  });

  it('calls an allowed host', async () => {
    const http = new OutboundHttp(['127.0.0.1']);
    const res = await http.request({ method: 'GET', url: `http://127.0.0.1:${port}/ok` }, AbortSignal.timeout(5000));
    expect(res).toEqual({ status: 200, body: 'hit' });
  });
});

describe('StepExecutor', () => {
  const noHttp: HttpRequester = {
    request: async () => {
      throw new Error('no network in this test');
    },
  };
  const ctx = { values: { who: 'Ada', tone: 'calm' }, outputs: { prev: { n: 1 } } };
  const llmStep = (over: Partial<Extract<Step, { kind: 'llm' }>> = {}): Step => ({
    id: 'ask',
    kind: 'llm',
    prompt: 'Hi {{who}} {{steps.prev.output}}',
    system: 'Be {{tone}}',
    ...over,
  });

  function fakeModel(reply: (req: { system?: string; prompt: string }) => string | Promise<string>) {
    const requests: { system?: string; prompt: string }[] = [];
    const model: ChatModel = {
      provider: 'openai',
      model: 'test-model',
      complete: async (req) => {
        requests.push(req);
        return { text: await reply(req), model: 'test-model-2025', usage: { input_tokens: 7, output_tokens: 3 } };
      },
    };
    return { model, requests };
  }

  it('fails an llm step with a message naming LLM_PROVIDER when no model is configured', async () => {
    const outcome = await new StepExecutor(noHttp, undefined).execute(llmStep(), ctx);
    expect(outcome.ok).toBe(false);
    expect(outcome.ok ? '' : outcome.error).toMatch(/LLM_PROVIDER/);
  });

  it('sends the rendered prompt and system to the model and outputs its reply', async () => {
    const { model, requests } = fakeModel((r) => `reply to ${r.prompt}`);
    const outcome = await new StepExecutor(noHttp, model).execute(llmStep(), ctx);
    expect(outcome).toEqual({
      ok: true,
      output: 'reply to Hi Ada {"n":1}',
      model: { provider: 'openai', model: 'test-model-2025', usage: { input_tokens: 7, output_tokens: 3 } },
    });
    expect(requests).toEqual([{ prompt: 'Hi Ada {"n":1}', system: 'Be calm' }]);
  });

  it('sends no system message when the step has none', async () => {
    const { model, requests } = fakeModel(() => 'ok');
    const { system: _s, ...withoutSystem } = llmStep() as Extract<Step, { kind: 'llm' }>;
    await new StepExecutor(noHttp, model).execute(withoutSystem, ctx);
    expect(requests).toHaveLength(1);
    expect(requests[0]).not.toHaveProperty('system');
  });

  it('turns a model error into a failed outcome, and a timeout into "timed out"', async () => {
    const failing = fakeModel(() => {
      throw new Error('model endpoint answered 500: overloaded');
    });
    expect(await new StepExecutor(noHttp, failing.model).execute(llmStep(), ctx)).toEqual({
      ok: false,
      error: 'model endpoint answered 500: overloaded',
    });
    const slow = fakeModel(() => {
      throw Object.assign(new Error('The operation was aborted due to timeout'), { name: 'TimeoutError' });
    });
    expect(await new StepExecutor(noHttp, slow.model).execute(llmStep(), ctx)).toEqual({
      ok: false,
      error: 'timed out',
    });
  });

  /** The output of one llm step whose model replies `reply`. */
  async function outputOf(reply: string): Promise<string> {
    const outcome = await new StepExecutor(noHttp, fakeModel(() => reply).model).execute(llmStep(), ctx);
    expect(outcome.ok).toBe(true);
    return (outcome as { output: string }).output;
  }
  const marker = (size: number) => `…[truncated: ${size} bytes as JSON, over the limit of ${MAX_OUTPUT_BYTES}]`;

  it('caps an output at 16 KiB of JSON, so control characters (6 bytes each as \\u0001) count as stored', async () => {
    expect(MAX_OUTPUT_BYTES).toBe(16 * 1024);
    const control = '\u0001'.repeat(MAX_OUTPUT_BYTES);
    const output = await outputOf(control);
    expect(jsonBytes(output)).toBeLessThanOrEqual(MAX_OUTPUT_BYTES);
    const size = MAX_OUTPUT_BYTES * 6 + 2;
    expect(output.endsWith(marker(size))).toBe(true);
    const kept = output.slice(0, -marker(size).length);
    // As many characters as fit: 6 bytes each, within the cap less the quotes and the marker.
    expect(kept).toBe('\u0001'.repeat(Math.floor((MAX_OUTPUT_BYTES - jsonBytes(marker(size))) / 6)));
    expect(MAX_OUTPUT_BYTES - jsonBytes(output)).toBeLessThan(6);
  });

  it('cuts multibyte text on a character boundary, never inside a surrogate pair', async () => {
    const wide = await outputOf('漢'.repeat(16_000));
    const wideMarker = marker(48_002);
    expect(wide.endsWith(wideMarker)).toBe(true);
    expect(wide.slice(0, -wideMarker.length)).toBe(
      '漢'.repeat(Math.floor((MAX_OUTPUT_BYTES - jsonBytes(wideMarker)) / 3)),
    );
    const emoji = await outputOf('😀'.repeat(5000));
    expect(jsonBytes(emoji)).toBeLessThanOrEqual(MAX_OUTPUT_BYTES);
    expect(emoji).not.toContain('\uFFFD');
    expect(emoji.split('…')[0]).toMatch(/^(😀)+$/u);
  });

  it('keeps an output of exactly 16 KiB of JSON and truncates one byte more', async () => {
    const exact = 'y'.repeat(MAX_OUTPUT_BYTES - 2); // plus the two quotes
    expect(await outputOf(exact)).toBe(exact);
    const over = await outputOf(`${exact}y`);
    expect(over).toBe(
      `${'y'.repeat(MAX_OUTPUT_BYTES - jsonBytes(marker(MAX_OUTPUT_BYTES + 1)))}${marker(MAX_OUTPUT_BYTES + 1)}`,
    );
    expect(jsonBytes(over)).toBe(MAX_OUTPUT_BYTES);

    const rendered = await new StepExecutor(noHttp, undefined).execute(
      { id: 'r', kind: 'render', template: '{{who}}' },
      { values: { who: '"\\'.repeat(10_000) }, outputs: {} },
    );
    expect(rendered.ok).toBe(true);
    expect(jsonBytes((rendered as { output: unknown }).output)).toBeLessThanOrEqual(MAX_OUTPUT_BYTES);
    expect((rendered as { output: string }).output.startsWith('"\\"\\')).toBe(true);
  });

  it('caps a structured output (an http answer) as the start of its JSON text', async () => {
    const body = { items: Array.from({ length: 3000 }, (_, i) => ({ i, note: '\u0007bell' })) };
    const http: HttpRequester = { request: async () => ({ status: 200, body }) };
    const outcome = await new StepExecutor(http, undefined).execute(
      { id: 'h', kind: 'http', method: 'GET', url: 'http://api.test/' },
      ctx,
    );
    const output = (outcome as { output: unknown }).output;
    expect(typeof output).toBe('string');
    expect(jsonBytes(output)).toBeLessThanOrEqual(MAX_OUTPUT_BYTES);
    expect((output as string).startsWith('{"status":200,"body":{"items":[{"i":0,"note":"\\u0007bell"}')).toBe(true);
    expect(output as string).toMatch(/…\[truncated: \d+ bytes as JSON, over the limit of 16384\]$/);
  });

  it('bounds a failure text and redacts every URL in it', async () => {
    const huge = fakeModel(() => {
      throw new Error(`model endpoint answered 500: ${'\u0002'.repeat(50_000)}`);
    });
    const failed = await new StepExecutor(noHttp, huge.model).execute(llmStep(), ctx);
    expect(failed.ok).toBe(false);
    expect(jsonBytes((failed as { error: string }).error)).toBeLessThanOrEqual(MAX_ERROR_BYTES);
    expect((failed as { error: string }).error.startsWith('model endpoint answered 500: \u0002')).toBe(true);

    const quoting = fakeModel(() => {
      throw new TypeError(
        'Request cannot be constructed from a URL that includes credentials: https://ada:pw-1@llm.test/v1?api_key=k-1',
      );
    });
    expect(await new StepExecutor(noHttp, quoting.model).execute(llmStep(), ctx)).toEqual({
      ok: false,
      error: 'Request cannot be constructed from a URL that includes credentials: https://***@llm.test/v1?***',
    });
  });

  it('renders a render step and outputs null for a wait step', async () => {
    const executor = new StepExecutor(noHttp, undefined);
    expect(await executor.execute({ id: 'r', kind: 'render', template: '{{who}}!' }, ctx)).toEqual({
      ok: true,
      output: 'Ada!',
    });
    expect(await executor.execute({ id: 'w', kind: 'wait', seconds: 0 }, ctx)).toEqual({ ok: true, output: null });
  });

  it('renders an http step and fails it on a non-2xx status', async () => {
    const calls: unknown[] = [];
    let status = 200;
    const http: HttpRequester = {
      request: async (req) => {
        calls.push(req);
        return { status, body: { ok: status === 200 } };
      },
    };
    const step: Step = {
      id: 'h',
      kind: 'http',
      method: 'POST',
      url: 'http://api.test/{{who}}',
      headers: { 'X-Tone': '{{tone}}' },
      body: '{"p":{{steps.prev.output}}}',
    };
    const executor = new StepExecutor(http, undefined);
    expect(await executor.execute(step, ctx)).toEqual({ ok: true, output: { status: 200, body: { ok: true } } });
    expect(calls).toEqual([
      { method: 'POST', url: 'http://api.test/Ada', headers: { 'X-Tone': 'calm' }, body: '{"p":{"n":1}}' },
    ]);
    status = 503;
    expect(await executor.execute(step, ctx)).toEqual({ ok: false, error: 'HTTP 503 from http://api.test/Ada' });
  });

  it('names the URL of a failed http step without its userinfo or query', async () => {
    const http: HttpRequester = { request: async () => ({ status: 401, body: 'no' }) };
    const step: Step = {
      id: 'h',
      kind: 'http',
      method: 'GET',
      url: 'https://{{who}}:{{tone}}-pw@api.test/v1/items?api_key={{tone}}-key&x=1#frag',
    };
    expect(await new StepExecutor(http, undefined).execute(step, ctx)).toEqual({
      ok: false,
      error: 'HTTP 401 from https://***@api.test/v1/items?***',
    });
  });
});

describe('size bounds (JSON bytes, as stored and served)', () => {
  it('capJson leaves a value that fits as it is, whatever its type', () => {
    const value = { a: [1, 'two', null], b: '\u0001' };
    expect(capJson(value, jsonBytes(value))).toBe(value);
    expect(capJson('x', 3)).toBe('x');
  });

  it('property: capJson always fits, and keeps a start of the text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 400 }), fc.integer({ min: 80, max: 600 }), (text, max) => {
        const capped = capJson(text, max) as string;
        expect(jsonBytes(capped)).toBeLessThanOrEqual(max);
        if (capped !== text) expect(text.startsWith(capped.slice(0, capped.lastIndexOf('…[truncated')))).toBe(true);
      }),
    );
  });

  it('boundOutputs keeps outputs that fit and replaces the largest by a note when they do not', () => {
    const small = { a: 'x', b: { n: 1 } };
    expect(boundOutputs(small)).toEqual(small);
    const outputs = { a: 'a'.repeat(100), big: '\u0001'.repeat(1000), b: 'b'.repeat(300), c: 'short' };
    const bounded = boundOutputs(outputs, 1000);
    expect(jsonBytes({ outputs: bounded })).toBeLessThanOrEqual(1000);
    expect(bounded).toEqual({
      a: outputs.a,
      big: '[omitted: 6002 bytes as JSON; see the step.completed event of step big]',
      b: outputs.b,
      c: 'short',
    });
    // The default bound: 20 steps of 16 KiB (the most a template has) fit as they are.
    const full = Object.fromEntries(
      Array.from({ length: 20 }, (_, i) => [
        `step-${i}`.padEnd(64, 'x'),
        capJson('\u0001'.repeat(20_000), MAX_OUTPUT_BYTES),
      ]),
    );
    expect(boundOutputs(full)).toEqual(full);
    expect(jsonBytes({ outputs: full })).toBeLessThanOrEqual(MAX_EVENT_DATA_BYTES);
  });

  it('fittingPage keeps the first events that fit, and always the first one', () => {
    const events = Array.from({ length: 5 }, (_, index) => ({ index, data: 'z'.repeat(100) }));
    const one = jsonBytes(events[0]);
    expect(fittingPage(events, 2 + 3 * one + 2)).toEqual(events.slice(0, 3));
    expect(fittingPage(events, 2 + 3 * one + 1)).toEqual(events.slice(0, 2));
    expect(fittingPage(events, 10)).toEqual(events.slice(0, 1));
    expect(fittingPage(events)).toEqual(events);
    expect(fittingPage([])).toEqual([]);
  });
});
