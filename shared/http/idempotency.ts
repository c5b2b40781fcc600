import type { Context } from 'hono';
import type { ValidationIssue } from '../errors.js';
import type { Sealed } from '../secrets.js';
import type { AppEnv } from './app-env.js';

/*
 * Idempotency keys (docs/identity-and-keys.md, idempotency keys, IETF draft-ietf-httpapi-idempotency-key-header) on the
 * endpoints that create something or start work: the header, its validation, and what an
 * app with such endpoints is handed (IdempotencyKeys). How answers are kept (Powertools'
 * idempotency utility) is idempotent-answers.ts, which only those groups bundle: an app
 * without idempotent endpoints carries none of it.
 */

export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
export const REPLAYED_HEADER = 'Idempotent-Replayed';
/** How long a key's answer is kept (docs/identity-and-keys.md, idempotency keys). */
export const IDEMPOTENCY_KEEP_SECONDS = 86_400;
/**
 * How long a first request counts as still being processed when its process never said how
 * it ended (it died): after that, a repeat is processed again. Lambda: the invocation's
 * remaining time (Powertools' own rule); elsewhere this.
 */
export const IN_PROGRESS_MS = 60_000;

/** 1–255 printable ASCII characters (the draft's key is a String of that alphabet). */
const KEY_PATTERN = '^[\\x20-\\x7E]{1,255}$';
const KEY = new RegExp(KEY_PATTERN);

/** Encrypts an answer that holds a secret (SecretBox: KMS on AWS, the local key file elsewhere). */
export interface AnswerSealer {
  seal(text: string, context: string): Promise<Sealed>;
  open(sealed: Sealed, context: string): Promise<string>;
}

/** One request with `Idempotency-Key`: whose key, which, how its answer is kept, its body as parsed. */
export interface IdempotencyScope {
  /**
   * Whose key it is: the caller's credential (shared/auth/caller.ts `credentialOf`), never the
   * principal alone, so that no replay crosses credentials.
   */
  readonly credential: string;
  readonly key: string;
  readonly answer: IdempotentAnswer;
  readonly body: unknown;
}

/**
 * What the composition hands to the apps with idempotent endpoints (functions/idempotency.ts):
 * answers `work` once per (credential, key): the first request runs it and its answer is kept
 * (unless it is an error); a repeat of the same request answers the kept answer with
 * `Idempotent-Replayed: true` and runs nothing; a different request with that key is 422
 * `idempotency_key_reused`; a repeat while the first is under way is 409.
 */
export interface IdempotencyKeys {
  answer(c: Context<AppEnv>, scope: IdempotencyScope, work: () => Promise<Response>): Promise<Response>;
}

/**
 * How an endpoint takes `Idempotency-Key`: `true` stores its answer as it is (unless the
 * handler says this one holds a secret: `answerHoldsSecret`); `'sealed'` stores it encrypted,
 * for answers that always hold a secret (a key, a signing secret, a client secret).
 */
export type IdempotentAnswer = true | 'sealed';

/**
 * The request's `Idempotency-Key`: undefined when it sent none, else its value or the
 * validation issue that refuses it (listed with the request's other issues).
 */
export function idempotencyKeyOf(c: Context<AppEnv>): { key: string } | { issue: ValidationIssue } | undefined {
  const key = c.req.header(IDEMPOTENCY_HEADER);
  if (key === undefined) return undefined;
  if (key.length > 255)
    return {
      issue: {
        type: 'string_too_long',
        loc: ['header', IDEMPOTENCY_HEADER],
        msg: 'String should have at most 255 characters',
        input: key,
        ctx: { max_length: 255 },
      },
    };
  if (!KEY.test(key))
    return {
      issue: {
        type: 'string_pattern_mismatch',
        loc: ['header', IDEMPOTENCY_HEADER],
        msg: `String should match pattern '${KEY_PATTERN}'`,
        input: key,
        ctx: { pattern: KEY_PATTERN },
      },
    };
  return { key };
}
