import type { IncomingMessage } from 'node:http';
import type { Context as LambdaContext } from 'aws-lambda';
import type { Caller } from '../auth/caller.js';

/** What a request carries through the app: its id, its caller, whether its body was read. */
export type AppEnv = {
  Variables: {
    requestId: string;
    caller: Caller | undefined;
    bodyRead: boolean | undefined;
    /** The JSON body as parsed (before validation), when the endpoint read one. */
    bodyJson: unknown;
    /** Set by a handler whose answer holds a secret: kept sealed for `Idempotency-Key` repeats. */
    answerHoldsSecret: boolean | undefined;
  };
  Bindings:
    | {
        /** On the Node adapter (the local platform), the request as Node received it. */
        incoming?: IncomingMessage;
        /** On Lambda (`handle` of hono/aws-lambda), the invocation's context. */
        lambdaContext?: LambdaContext;
      }
    | undefined;
};
