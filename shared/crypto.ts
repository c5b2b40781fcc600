import { createHash, randomBytes } from 'node:crypto';

export const sha256Hex = (data: string): string => createHash('sha256').update(data, 'utf8').digest('hex');

/** JSON with object keys sorted and no whitespace, so equal content hashes equally. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.keys(value as Record<string, unknown>)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
  return `{${entries.join(',')}}`;
}

/** A URL-safe random secret (256 bits) for keys and client secrets. */
export const randomSecret = (): string => randomBytes(32).toString('base64url');
