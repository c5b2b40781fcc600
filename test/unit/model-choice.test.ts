import { describe, expect, it } from 'vitest';
import { chatModel, languageModel, stepModel } from '../../functions/composition.js';
import { ConfigError, loadConfig } from '../../shared/config.js';

/** LLM_PROVIDER as configuration reads it, and the model each feature gets from it. */
describe('the model provider', () => {
  it('is none without LLM_PROVIDER and LLM_BASE_URL: llm steps and ask have no model', () => {
    const config = loadConfig({});
    expect(config.llm.provider).toBeUndefined();
    expect(chatModel(config)).toBeUndefined();
    expect(languageModel(config)).toBeUndefined();
    expect(stepModel(config)).toEqual({ model: undefined, timeoutMs: 60_000 });
  });

  it('is openai when only LLM_BASE_URL is set, with its model and LLM_TIMEOUT_SECONDS', () => {
    const config = loadConfig({ LLM_BASE_URL: 'http://127.0.0.1:9/v1', LLM_MODEL: 'm-1', LLM_TIMEOUT_SECONDS: '5' });
    expect(config.llm.provider).toBe('openai');
    expect(chatModel(config)).toMatchObject({ provider: 'openai', model: 'm-1' });
    expect(languageModel(config)).toMatchObject({ provider: 'openai' });
    expect(stepModel(config).timeoutMs).toBe(5_000);
  });

  it('is Bedrock with LLM_PROVIDER=bedrock and LLM_MODEL, for steps and ask alike', () => {
    const config = loadConfig({ LLM_PROVIDER: 'bedrock', LLM_MODEL: 'anthropic.claude-3-haiku-20240307-v1:0' });
    expect(chatModel(config)).toMatchObject({ provider: 'bedrock', model: 'anthropic.claude-3-haiku-20240307-v1:0' });
    expect(languageModel(config)).toMatchObject({ provider: 'bedrock' });
  });

  it('gives the local stand-in to llm steps, never to ask and suggestions (their catalog path stays)', () => {
    const config = loadConfig({ LLM_PROVIDER: 'local', LLM_BASE_URL: 'http://127.0.0.1:9/v1' });
    expect(chatModel(config)).toMatchObject({ provider: 'local' });
    expect(languageModel(config)).toBeUndefined();
  });

  it.each([
    [{ LLM_PROVIDER: 'openai' }, 'invalid configuration: LLM_BASE_URL is required when LLM_PROVIDER=openai'],
    [{ LLM_PROVIDER: 'bedrock' }, /^invalid configuration: LLM_MODEL \(a Bedrock model id/],
    [
      { LLM_PROVIDER: 'local', AWS_LAMBDA_FUNCTION_NAME: 'dpm-prod-crews-worker' },
      /LLM_PROVIDER=local is the local stand-in model, which does not run on AWS/,
    ],
    [{ LLM_PROVIDER: 'gpt' }, 'invalid configuration: LLM_PROVIDER must be one of openai, bedrock, local'],
    [{ LLM_TIMEOUT_SECONDS: '0' }, /^invalid configuration: LLM_TIMEOUT_SECONDS /],
  ])('refuses %j in one line', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });
});
