import { describe, expect, it } from 'vitest';
import { OutboundHttp } from '../../shared/adapters/outbound-http.js';
import { BUILT_IN_TEMPLATES } from '../../functions/crews/templates/built-in-templates.js';
import { TemplateRequest } from '../../functions/crews/templates/template-schemas.js';
import { declarationIssues, resolveValues } from '../../functions/crews/templates/declaration.js';
import { StepExecutor, type StepOutcome } from '../../functions/crews/worker/steps.js';

/** The built-in crew templates (docs/sdk.md): valid declarations that need a model. */
describe('built-in crew templates', () => {
  it("are named like the SDK CLI's crew types, with fixed distinct ids", () => {
    expect(BUILT_IN_TEMPLATES.map((t) => t.name)).toEqual([
      'ask',
      'data_engineering',
      'data_suggestion',
      'semantic_model',
    ]);
    expect(new Set(BUILT_IN_TEMPLATES.map((t) => t.id)).size).toBe(4);
  });

  for (const builtIn of BUILT_IN_TEMPLATES) {
    it(`${builtIn.name}: a template an admin could declare, made of render and llm steps`, () => {
      const { id: _id, ...declared } = builtIn;
      const parsed = TemplateRequest.safeParse(declared);
      expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
      expect(parsed.data).toEqual(declared);
      expect(declarationIssues(declared)).toEqual([]);
      expect(builtIn.steps.map((s) => s.kind)).toEqual(['render', 'llm']);
    });

    it(`${builtIn.name}: without a model its llm step fails with the clear message`, async () => {
      const required = Object.fromEntries(
        builtIn.variables.filter((v) => v.required).map((v) => [v.name, `the ${v.name}`]),
      );
      const values = resolveValues(builtIn.variables, required);
      const executor = new StepExecutor(new OutboundHttp([]), undefined);
      const outputs: Record<string, unknown> = {};
      const outcomes: StepOutcome[] = [];
      for (const step of builtIn.steps) {
        const outcome = await executor.execute(step, { values, outputs });
        if (outcome.ok) outputs[step.id] = outcome.output;
        outcomes.push(outcome);
      }
      expect(outcomes).toEqual([
        { ok: true, output: expect.stringContaining('the ') },
        { ok: false, error: 'no language model is configured (set LLM_PROVIDER: openai, bedrock or local)' },
      ]);
    });
  }
});
