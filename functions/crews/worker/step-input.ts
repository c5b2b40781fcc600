import { redactUrl } from '../../../shared/redact.js';
import { capJson, capText, MAX_INPUT_BYTES } from '../limits.js';
import type { Step } from '../templates/template-schemas.js';
import { type RenderContext, render } from '../templates/templating.js';

/**
 * What a step sends, rendered from the run's values and the outputs before it: the one
 * rendering of a step, used by the executor (to send it) and by `decide` (to show it in
 * `step.started`, and in `step.waiting` as the next step's input).
 */
export type StepRequest =
  | { readonly kind: 'render'; readonly text: string }
  | { readonly kind: 'llm'; readonly text: string; readonly system?: string }
  | {
      readonly kind: 'http';
      readonly method: string;
      readonly url: string;
      readonly headers: Readonly<Record<string, string>>;
      readonly body?: string;
    }
  | { readonly kind: 'wait'; readonly seconds: number }
  | { readonly kind: 'approval'; readonly prompt: string };

/** `step` rendered with `ctx`. */
export function renderStep(step: Step, ctx: RenderContext): StepRequest {
  switch (step.kind) {
    case 'render':
      return { kind: 'render', text: render(step.template, ctx) };
    case 'llm':
      return {
        kind: 'llm',
        text: render(step.prompt, ctx),
        ...(step.system !== undefined ? { system: render(step.system, ctx) } : {}),
      };
    case 'http':
      return {
        kind: 'http',
        method: step.method,
        url: render(step.url, ctx),
        // Header names are names from users: kept as entries, never as plain-object keys.
        headers: Object.fromEntries(Object.entries(step.headers ?? {}).map(([k, v]) => [k, render(v, ctx)])),
        ...(step.body !== undefined ? { body: render(step.body, ctx) } : {}),
      };
    case 'wait':
      return { kind: 'wait', seconds: step.seconds };
    case 'approval':
      return { kind: 'approval', prompt: render(step.prompt, ctx) };
  }
}

/** What a masked header value shows. */
export const MASKED = '***';

/**
 * Header names whose values are secrets: credentials (Authorization, Proxy-Authorization,
 * Cookie), and any name that says key, token, secret, password, signature, session or auth.
 */
const SECRET_HEADER = /authori[sz]ation|cookie|key|token|secret|passw(or)?d|pwd|credential|signature|session|auth/i;

export const isSecretHeader = (name: string): boolean => SECRET_HEADER.test(name);

/**
 * A step's input as the run log shows it (`step.started` data `input`): secret header values
 * masked, credentials in the URL hidden, each text at most MAX_INPUT_BYTES (cut with a note
 * of its size) so the event stays well inside an item.
 */
export function shownInput(request: StepRequest): Record<string, unknown> {
  const cap = (text: string) => capText(text, MAX_INPUT_BYTES);
  switch (request.kind) {
    case 'render':
      return { text: cap(request.text) };
    case 'llm':
      return { text: cap(request.text), ...(request.system !== undefined ? { system: cap(request.system) } : {}) };
    case 'http': {
      const headers = Object.entries(request.headers).map(([name, value]) => [
        name,
        isSecretHeader(name) ? MASKED : value,
      ]);
      return {
        method: request.method,
        url: cap(redactUrl(request.url)),
        // At most the headers' own bound as a whole (each value is bounded by the template).
        headers: capJson(Object.fromEntries(headers), MAX_INPUT_BYTES),
        ...(request.body !== undefined ? { body: cap(request.body) } : {}),
      };
    }
    case 'wait':
      return { seconds: request.seconds };
    case 'approval':
      return { prompt: cap(request.prompt) };
  }
}
