import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { LAMBDA_DEFINE } from '../../infra/aws/service-function.js';

/**
 * Lambda bundles are built with LAMBDA_DEFINE: their schemas are the same validators without
 * the documentation (shared/schema.ts), which only `npm run openapi`, the local platform and
 * the tests use. Built here as a Lambda's code would be, with and without it.
 */
const ENTRY = `
import * as z from 'zod/mini';
import { component, components, doc } from './shared/schema.ts';
const plain = z.strictObject({ name: z.string().check(z.minLength(1)) });
const documented = component('SchemaDocsProbe', doc(plain, 'a probe'));
export const result = {
  same: documented === plain,
  description: z.globalRegistry.get(documented)?.description,
  registered: components._idmap.has('SchemaDocsProbe'),
  accepts: documented.safeParse({ name: 'a' }).success,
  refuses: [documented.safeParse({ name: '' }).success, documented.safeParse({ name: 'a', more: 1 }).success],
};
`;

async function built(define: Record<string, string>) {
  const out = await build({
    stdin: { contents: ENTRY, resolveDir: new URL('../../', import.meta.url).pathname, loader: 'ts' },
    bundle: true,
    write: false,
    platform: 'node',
    format: 'esm',
    define,
    logLevel: 'silent',
  });
  const code = out.outputFiles[0]!.text;
  return ((await import(`data:text/javascript;base64,${Buffer.from(code).toString('base64')}`)) as { result: unknown })
    .result;
}

describe('schema documentation in Lambda bundles', () => {
  it('is left out with LAMBDA_DEFINE: the same schema, validating the same', async () => {
    expect(await built({ ...LAMBDA_DEFINE })).toEqual({
      same: true,
      description: undefined,
      registered: false,
      accepts: true,
      refuses: [false, false],
    });
  });

  it('is carried without it (the documents are made from it)', async () => {
    expect(await built({})).toEqual({
      same: false,
      description: 'a probe',
      registered: true,
      accepts: true,
      refuses: [false, false],
    });
  });
});
