import { describe, expect, it } from 'vitest';
import { parseTableReference, tableReference } from '../../functions/metastore/table-reference.js';
import { applyOperations } from '../../shared/adapters/builtin-metastore.js';
import { DataHubCatalog } from '../../shared/adapters/datahub.js';
import { Invalid } from '../../shared/errors.js';
import { startFakeDataHub } from '../support/datahub-server.js';

describe('parseTableReference (`{table}` of the SDK tag and domain routes)', () => {
  it.each([
    ['hive.sales.orders', ['hive', 'sales', 'orders']],
    ['"sales.eu".core.orders', ['sales.eu', 'core', 'orders']],
    ['"a""b".s."t.x"', ['a"b', 's', 't.x']],
    ['c."s".t', ['c', 's', 't']],
    [['"."', '"."', '"."'].join('.'), ['.', '.', '.']],
    ['c.s."""t"""', ['c', 's', '"t"']],
  ])('%s', (text, [catalog, schema, table]) => {
    expect(parseTableReference(text)).toEqual({ catalog, schema, table });
  });

  it.each([
    '',
    'a.b',
    'a.b.c.d',
    'a..c',
    '.b.c',
    'a.b.',
    '"a.b.c',
    '"a"b.c.d',
    'a"b.c.d',
    '""."b".c',
    '"a".b."c"d',
    'sales.eu.core.orders',
  ])('refuses %j', (text) => {
    expect(parseTableReference(text)).toBeUndefined();
  });

  it('answers 422 value_error at path.table for a malformed reference or a name no route has', () => {
    for (const text of ['a.b', 'a."b#".c', `a.b.${'t'.repeat(256)}`]) {
      try {
        tableReference(text);
        expect.unreachable();
      } catch (err) {
        expect(err).toBeInstanceOf(Invalid);
        expect((err as Invalid).issues).toEqual([
          expect.objectContaining({ type: 'value_error', loc: ['path', 'table'], input: text }),
        ]);
      }
    }
  });
});

describe('applyOperations (the built-in metastore’s ALTER TABLE)', () => {
  const table = {
    catalog: 'c',
    schema: 's',
    table: 't',
    description: 'old',
    columns: [
      { name: 'id', type: 'bigint', description: null },
      { name: 'email', type: 'varchar', description: 'mail' },
    ],
  };

  it('applies every operation in order', () => {
    const next = applyOperations(table, [
      { op: 'add_column', name: 'amount', type: 'decimal(10,2)', comment: 'money' },
      { op: 'rename_column', name: 'email', new_name: 'mail' },
      { op: 'set_column_comment', name: 'mail', comment: 'where to write' },
      { op: 'drop_column', name: 'id' },
      { op: 'set_comment', comment: null },
      {
        op: 'set_properties',
        properties: new Map<string, string | number | boolean>([
          ['__proto__', 1],
          ['format', 'ORC'],
        ]),
      },
    ]);
    expect(next.description).toBeNull();
    expect(next.columns!.map((c) => [c.name, c.type, c.description])).toEqual([
      ['mail', 'varchar', 'where to write'],
      ['amount', 'decimal(10,2)', 'money'],
    ]);
    expect(next.properties).toEqual([
      { name: '__proto__', value: 1 },
      { name: 'format', value: 'ORC' },
    ]);
    // the item read is left as it was
    expect(table.columns.map((c) => c.name)).toEqual(['id', 'email']);
  });

  it.each([
    [[{ op: 'drop_column', name: 'nope' }], 0, 'name', /has no column 'nope'/],
    [[{ op: 'add_column', name: 'id', type: 'int', comment: null }], 0, 'name', /has a column 'id' already/],
    [[{ op: 'rename_column', name: 'id', new_name: 'email' }], 0, 'new_name', /has a column 'email' already/],
    [
      [
        { op: 'drop_column', name: 'id' },
        { op: 'drop_column', name: 'email' },
      ],
      1,
      'name',
      /last column/,
    ],
    [
      [
        { op: 'set_comment', comment: 'x' },
        { op: 'rename_column', name: 'id', new_name: 'key' },
        { op: 'set_column_comment', name: 'id', comment: 'gone' },
      ],
      2,
      'name',
      /operation 2 \(set_column_comment\): table c\.s\.t has no column 'id'/,
    ],
  ] as const)('refuses %j at its index', (operations, index, field, message) => {
    try {
      applyOperations(table, operations as never);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(Invalid);
      const [issue] = (err as Invalid).issues;
      expect(issue).toMatchObject({ type: 'value_error', loc: ['body', 'operations', index, field] });
      expect(issue!.msg).toMatch(message);
    }
  });
});

describe('untagging and leaving a domain on DataHub (removeTag, unsetDomain)', () => {
  it('takes the tag off and leaves only the domain named', async () => {
    const datahub = await startFakeDataHub();
    try {
      const catalog = new DataHubCatalog({ gmsUrl: datahub.url, token: datahub.token });
      const urn = catalog.datasetUrn('hive', 'sales', 'orders');
      datahub.addDataset(urn, ['id']);
      await catalog.createTag('PII');
      await catalog.createTag('Gold');
      await catalog.createDomain('Finance');
      await catalog.createDomain('Sales');
      await catalog.annotate(urn, { tags: ['PII', 'Gold'], domain: 'Finance' });

      await catalog.annotate(urn, { removeTags: ['PII'], removeDomain: 'Sales' });
      expect(await catalog.getEntity(urn)).toMatchObject({ tags: ['Gold'], domain: 'Finance' });
      await catalog.annotate(urn, { removeDomain: 'Finance' });
      expect(await catalog.getEntity(urn)).toMatchObject({ tags: ['Gold'], domain: null });
      const operations = datahub.requests.map((r) => r.operation);
      expect(operations.filter((o) => o === 'RemoveTag')).toHaveLength(1);
      expect(operations.filter((o) => o === 'UnsetDomain')).toHaveLength(1);
    } finally {
      await datahub.stop();
    }
  });
});
