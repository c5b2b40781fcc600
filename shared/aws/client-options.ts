/**
 * What every SDK client of the service is built with: attempts, timeouts, and the emulator
 * endpoint and dummy credentials when one is configured. No SDK import here: the modules
 * that load a client on first use (Secrets Manager, KMS) import this one, and a bundle
 * must not pull the DynamoDB client into what it loads lazily.
 */

export interface ClientTarget {
  readonly region: string;
  readonly endpoint: string | undefined;
}

/**
 * Attempts per call (the first and two retries). With REQUEST_TIMEOUT_MS per attempt and the
 * SDK's backoff between them (at most 0.6 s), a dependency that accepts connections and
 * never answers costs a call about 8 s: the request still answers 503 within 10 s. Long
 * enough that a slow but working emulator under load is not retried (a retried write that
 * was applied could meet its own condition and answer a spurious 409).
 */
export const MAX_ATTEMPTS = 3;
/** Per attempt, from sending the request to the end of the answer (AWS answers in milliseconds). */
export const REQUEST_TIMEOUT_MS = 2_500;
/** To establish the TCP (and TLS) connection. */
export const CONNECTION_TIMEOUT_MS = 1_000;

export function emulatorOptions(target: ClientTarget) {
  return {
    region: target.region,
    maxAttempts: MAX_ATTEMPTS,
    ...(target.endpoint
      ? {
          endpoint: target.endpoint,
          credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
        }
      : {}),
  };
}

/**
 * The request handler's timeouts. `throwOnRequestTimeout` is what makes `requestTimeout`
 * end the attempt: without it the SDK only logs a warning and waits for the service's
 * default socket timeout (5 minutes for DynamoDB), so a silent endpoint hung every request.
 */
export function requestTimeouts() {
  return {
    connectionTimeout: CONNECTION_TIMEOUT_MS,
    requestTimeout: REQUEST_TIMEOUT_MS,
    throwOnRequestTimeout: true,
  };
}
