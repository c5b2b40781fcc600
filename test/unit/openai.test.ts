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
    expect(reply).toBe('[m-1](be brief) hello');
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
