import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenAiChatModel } from '../../shared/adapters/openai.js';
import { type FakeModel, startFakeModel } from '../support/openai-server.js';

let model: FakeModel;
beforeAll(async () => {
  model = await startFakeModel();
});
afterAll(() => model.stop());

describe('OpenAiChatModel', () => {
  it('sends one chat completion with the system and user messages and answers the reply text', async () => {
    const chat = new OpenAiChatModel({ baseUrl: model.baseUrl, model: 'm-1', apiKey: 'plain-key' });
    const reply = await chat.complete({ system: 'be brief', prompt: 'hello' }, AbortSignal.timeout(5000));
    expect(reply).toEqual({
      text: '[m-1](be brief) hello',
      model: 'm-1',
      usage: { input_tokens: 1, output_tokens: 1 },
    });
    expect(model.requests.at(-1)).toEqual({
      model: 'm-1',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hello' },
      ],
      authorization: 'Bearer plain-key',
    });
  });

  it('reads the API key from a provider (Secrets Manager on AWS) when given one', async () => {
    let reads = 0;
    const chat = new OpenAiChatModel({
      baseUrl: model.baseUrl,
      model: undefined,
      apiKey: async () => {
        reads++;
        return 'secret-key';
      },
    });
    await chat.complete({ prompt: 'x' }, AbortSignal.timeout(5000));
    expect(model.requests.at(-1)?.authorization).toBe('Bearer secret-key');
    expect(reads).toBe(1);
  });

  it("reports the endpoint's error message on a failed completion", async () => {
    const chat = new OpenAiChatModel({ baseUrl: model.baseUrl, model: 'm', apiKey: undefined });
    await expect(chat.complete({ prompt: 'please FAIL' }, AbortSignal.timeout(5000))).rejects.toThrow(
      'model endpoint answered 500: model overloaded',
    );
    expect(model.requests.at(-1)?.authorization).toBeUndefined();
  });
});

describe('OpenAiChatModel when the endpoint refuses', () => {
  const chat = (over: { model?: string } = {}) =>
    new OpenAiChatModel({ baseUrl: model.baseUrl, model: over.model ?? 'm', apiKey: 'sk-test-secret-key' });

  it('tries a rate-limited call again until it answers (429 twice, then the reply)', async () => {
    const before = model.requests.length;
    const reply = await chat().complete({ prompt: 'THROTTLE2 please' }, AbortSignal.timeout(20_000));
    expect(reply.text).toBe('[m] THROTTLE2 please');
    expect(model.requests.length - before).toBe(3);
  });

  it('fails at once on access denied, without the key the endpoint quoted', async () => {
    const before = model.requests.length;
    const error = await chat()
      .complete({ prompt: 'DENY me' }, AbortSignal.timeout(5000))
      .then(
        () => undefined,
        (err: Error) => err,
      );
    expect(error?.message).toBe('model endpoint answered 403: Access denied for key ***');
    expect(model.requests.length - before).toBe(1);
  });

  it('fails at once on an unknown model with the endpoint’s message', async () => {
    await expect(chat({ model: 'no-such-model' }).complete({ prompt: 'x' }, AbortSignal.timeout(5000))).rejects.toThrow(
      'model endpoint answered 404: The model `no-such-model` does not exist',
    );
  });

  it('ends a call the endpoint does not answer with the signal’s reason (a timeout)', async () => {
    const error = await chat()
      .complete({ prompt: 'SLOW' }, AbortSignal.timeout(300))
      .then(
        () => undefined,
        (err: Error) => err,
      );
    expect(error?.name).toBe('TimeoutError');
  });
});

describe('OpenAiChatModel failures quote no credentials', () => {
  it('redacts the userinfo and query of the endpoint when the call cannot be made', async () => {
    const chat = new OpenAiChatModel({
      baseUrl: 'http://ada:pw-llm@127.0.0.1:1/v1?api_key=key-llm',
      model: 'm',
      apiKey: undefined,
    });
    const error = await chat.complete({ prompt: 'x' }, AbortSignal.timeout(5000)).then(
      () => undefined,
      (err: Error) => err,
    );
    expect(error).toBeInstanceOf(Error);
    expect(error!.message).toMatch(/^model endpoint http:\/\/\*\*\*@127\.0\.0\.1:1\/v1\?\*\*\* did not answer: /);
    expect(error!.message).not.toMatch(/pw-llm|key-llm/);
  });

  it('removes the API key from an error message that echoes it, and bounds that message', async () => {
    const server = createServer((_req, res) => {
      res.statusCode = 401;
      res.setHeader('content-type', 'application/json');
      const message = `Incorrect API key provided: echo-key-123. ${'x'.repeat(5000)}`;
      res.end(JSON.stringify({ error: { message } }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const chat = new OpenAiChatModel({
        baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
        model: 'm',
        apiKey: 'echo-key-123',
      });
      const error = await chat.complete({ prompt: 'x' }, AbortSignal.timeout(5000)).then(
        () => undefined,
        (err: Error) => err,
      );
      expect(error!.message.startsWith('model endpoint answered 401: Incorrect API key provided: ***. xxx')).toBe(true);
      expect(error!.message).not.toContain('echo-key-123');
      expect(error!.message.length).toBeLessThan(600);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
