/** The size of a value as UTF-8 JSON (what the size limits of stored items are measured in). */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? 'null', 'utf8');
}
