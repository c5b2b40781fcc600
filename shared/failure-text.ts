import { redactUrls } from './redact.js';

/** How a caller shows why something failed: its words for a timeout, and its bound. */
export interface FailureTextOptions {
  /** The text of a timeout: an error named `TimeoutError` (what AbortSignal.timeout aborts with). */
  readonly timedOut: string;
  /** An `AbortError` is a timeout too (where the only abort is a timeout's). Default: false. */
  readonly abortIsTimeout?: boolean;
  /** The text bounded as the caller stores it (redacted before it is cut). */
  readonly cap: (text: string) => string;
}

/**
 * Why something failed, as events, the log and answers may show it: the error's message (a
 * timeout in the caller's words), every URL in it redacted (an error may quote the URL it
 * was given, credentials included), bounded by the caller's `cap`.
 */
export function failureText(err: unknown, options: FailureTextOptions): string {
  const e = err as { name?: unknown; message?: unknown } | null | undefined;
  if (e?.name === 'TimeoutError' || (options.abortIsTimeout && e?.name === 'AbortError')) return options.timedOut;
  return options.cap(redactUrls(String(e?.message ?? err)));
}
