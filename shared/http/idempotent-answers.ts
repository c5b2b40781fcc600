import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  IdempotencyInconsistentStateError,
  IdempotencyPersistenceLayerError,
  IdempotencyValidationError,
  makeIdempotent,
} from '@aws-lambda-powertools/idempotency';
import type { BasePersistenceLayer } from '@aws-lambda-powertools/idempotency/persistence';
import type { Context } from 'hono';
import { Conflict, Invalid } from '../errors.js';
import { logger } from '../logger.js';
import type { Sealed } from '../secrets.js';
import {
  type AnswerSealer,
  IDEMPOTENCY_HEADER,
  IDEMPOTENCY_KEEP_SECONDS,
  type IdempotencyKeys,
  type IdempotencyScope,
  IN_PROGRESS_MS,
  REPLAYED_HEADER,
} from './idempotency.js';
import type { AppEnv } from './app-env.js';

/*
 * Idempotency keys kept by Powertools' idempotency utility: its persistence layer keeps one
 * record per (credential, key) with a conditional put (so of two first requests at once
 * exactly one is processed), the payload hash (a different request with the same key is
 * refused), the 24-hour expiry, and deletes the record when the work fails (a failed request
 * stores nothing). What is ours: the key comes from a header and is scoped to the caller's
 * credential (a Bearer caller's principal, a PSK caller's own key), the "payload" is the request (method, path, canonical JSON body), the stored
 * result is the answer (status, headers, body), sealed when it holds a secret, and
 * Powertools' errors become the contract's 409 and 422. Only the groups with idempotent
 * endpoints bundle it (through functions/idempotency.ts).
 */

/** Where answers are kept, and how secret ones are sealed. */
interface KeptAnswers {
  readonly persistence: BasePersistenceLayer;
  /** The groups whose answers may hold a secret have one; an answer to seal without it is a wiring error. */
  readonly sealer?: AnswerSealer;
}

/** Answer headers that are part of a stored answer (the others are made per response). */
const KEPT_HEADERS = new Set(['content-type', 'location']);

/** IdempotencyKeys whose answers `persistence` keeps (sealed by `sealer` when they hold a secret). */
export function keptAnswers(persistence: BasePersistenceLayer, sealer?: AnswerSealer): IdempotencyKeys {
  const keys: KeptAnswers = { persistence, ...(sealer ? { sealer } : {}) };
  return { answer: (c, scope, work) => idempotentAnswer(keys, c, scope, work) };
}

/** The stored answer (Powertools' `responseData`): the body as text, or sealed. */
type StoredAnswer = {
  readonly status: number;
  readonly headers: readonly (readonly [string, string])[];
} & ({ readonly body: string } | { readonly sealed: Sealed });

function sealerOf(keys: KeptAnswers): AnswerSealer {
  if (!keys.sealer)
    throw new Error(
      'a sealed answer, and no sealer to open it (functions/idempotency.ts: idempotencyKeys without one)',
    );
  return keys.sealer;
}

/** The work answered an error: it is given to the caller and nothing is stored. */
class NotStored extends Error {
  constructor(readonly response: Response) {
    super('not stored');
  }
}

/** `IdempotencyKeys.answer` (its contract: shared/http/idempotency.ts) with Powertools' utility. */
async function idempotentAnswer(
  keys: KeptAnswers,
  c: Context<AppEnv>,
  scope: IdempotencyScope,
  work: () => Promise<Response>,
): Promise<Response> {
  // Bound into a sealed answer: it opens only for this credential's key.
  const sealContext = `idempotency:${scope.credential}:${scope.key}`;
  let fresh: Response | undefined;
  const config = new IdempotencyConfig({
    eventKeyJmesPath: 'scope',
    payloadValidationJmesPath: 'request',
    throwOnNoIdempotencyKey: true,
    expiresAfterSeconds: IDEMPOTENCY_KEEP_SECONDS,
    hashFunction: 'sha256',
  });
  const lambdaContext = c.env?.lambdaContext;
  const remaining = { getRemainingTimeInMillis: () => lambdaContext?.getRemainingTimeInMillis() ?? IN_PROGRESS_MS };
  const once = makeIdempotent(
    async (_payload: unknown, _context: typeof remaining): Promise<StoredAnswer> => {
      const answer = await work();
      if (answer.status >= 400) throw new NotStored(answer);
      const text = await answer.text();
      fresh = new Response(text, { status: answer.status, headers: answer.headers });
      const headers = [...answer.headers].filter(([name]) => KEPT_HEADERS.has(name.toLowerCase()));
      if (scope.answer !== 'sealed' && !c.get('answerHoldsSecret'))
        return { status: answer.status, headers, body: text };
      return { status: answer.status, headers, sealed: await sealerOf(keys).seal(text, sealContext) };
    },
    { persistenceStore: keys.persistence, config, keyPrefix: 'dpm' },
  );
  try {
    const stored = await once(
      {
        scope: [scope.credential, scope.key],
        request: { method: c.req.method, path: c.req.path, body: scope.body ?? null },
      },
      remaining,
    );
    if (fresh) return fresh;
    const body = 'sealed' in stored ? await sealerOf(keys).open(stored.sealed, sealContext) : stored.body;
    const headers = new Headers(stored.headers as [string, string][]);
    headers.set(REPLAYED_HEADER, 'true');
    return new Response(body, { status: stored.status, headers });
  } catch (err) {
    if (err instanceof NotStored) return err.response;
    // The work was done but its answer could not be kept: the caller gets it all the same
    // (a repeat within IN_PROGRESS_MS is 409, later it is processed again).
    if (fresh) {
      logger.warn('idempotency: the answer could not be kept', { error: err as Error });
      return fresh;
    }
    if (err instanceof IdempotencyValidationError)
      throw new Invalid([
        {
          type: 'idempotency_key_reused',
          loc: ['header', IDEMPOTENCY_HEADER],
          msg: 'This Idempotency-Key was used for a different request (method, path or body); use a new key',
          input: scope.key,
        },
      ]);
    if (err instanceof IdempotencyAlreadyInProgressError || err instanceof IdempotencyInconsistentStateError)
      throw new Conflict(
        'A request with this Idempotency-Key is still being processed; repeat it once that one has answered',
      );
    // The store did not answer: its SDK error, which the endpoint layer answers with 503.
    if (err instanceof IdempotencyPersistenceLayerError && err.cause instanceof Error) throw err.cause;
    throw err;
  }
}
