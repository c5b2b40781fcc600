/** Small pieces every HTTP adapter needs to read an answer and log a failed call. */

/** The JSON of an answer's text; undefined when it is empty or not JSON. */
export function jsonOrUndefined(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Why a call got no answer, for the log: the error's name and its network code (or message). */
export function networkReason(err: unknown): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string } };
  return [e.name, e.cause?.code ?? e.message].filter(Boolean).join(': ');
}
