/** ISO 8601 UTC with milliseconds and `Z`, as the contract writes every timestamp. */
export const nowIso = (): string => new Date().toISOString();
