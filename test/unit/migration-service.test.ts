import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MigrationService } from '../../functions/migration/service.js';
import type { ConfigStore, ConfigWrite, ConnectionStore } from '../../functions/migration/store.js';
import type { Caller } from '../../shared/auth/caller.js';
import { statusOf } from '../../shared/http/errors.js';
import type { WorkflowEngine } from '../../shared/ports/workflow.js';
import { LocalKeyWrapper, SecretBox } from '../../shared/secrets.js';
import { rejection } from '../support/rejection.js';

const admin: Caller = {
  principal: '["https://issuer.test","sub-ops"]',
  name: 'ops',
  roles: new Set(['admin']),
  via: 'bearer',
};

/** The config item in memory: each write applies and hands back the item as it was. */
function fakeConfigs() {
  let item: Record<string, unknown> = { id: 'current' };
  const store: ConfigStore = {
    get: async () => item,
    update: async (write: ConfigWrite) => {
      const before = item;
      if (write.requires && Object.hasOwn(item, write.requires.field) !== write.requires.present) return undefined;
      item = { ...item, ...write.set, updated_by: write.updatedBy, updated_at: write.updatedAt };
      for (const f of write.remove) delete item[f];
      return before;
    },
  };
  return { store, stored: () => item };
}

function setup() {
  const published: Record<string, unknown>[] = [];
  const workflow: WorkflowEngine = {
    publishConfig: async (changes) => void published.push({ ...changes }),
    getConnection: async () => undefined,
    testConnection: async () => ({ ok: true, message: 'ok' }),
  };
  const configs = fakeConfigs();
  const box = new SecretBox(new LocalKeyWrapper(mkdtempSync(join(tmpdir(), 'dpm-migration-'))));
  const service = new MigrationService(configs.store, {} as ConnectionStore, workflow, box);
  return { service, published, stored: configs.stored };
}

describe('MigrationService.updateConfig publishing to the workflow engine', () => {
  it('publishes every given field, secrets in clear, cleared fields as null', async () => {
    const { service, published, stored } = setup();
    await service.updateConfig(
      { copy_mappers: 4, copy_bandwidth: 100, fs_user: 'hdfs', objstore_source_secret_key: 'src-secret-123' } as never,
      admin,
    );
    expect(published).toEqual([
      { copy_mappers: 4, copy_bandwidth: 100, fs_user: 'hdfs', objstore_source_secret_key: 'src-secret-123' },
    ]);
    // stored sealed, never in clear
    expect(JSON.stringify(stored())).not.toContain('src-secret-123');

    await service.updateConfig({ fs_user: 'hdfs', email_recipients: 'ops@example.com' } as never, admin);
    expect(published[1]).toEqual({ fs_user: 'hdfs', email_recipients: 'ops@example.com' });

    await service.updateConfig({ fs_user: '' } as never, admin);
    expect(published[2]).toEqual({ fs_user: null });
  });

  it('publishes again on a retry (a failed publish gets repaired), and nothing when the write is refused', async () => {
    const { service, published } = setup();
    await service.updateConfig({ tracking_database: 'mig' } as never, admin);
    await service.updateConfig({ tracking_database: 'mig' } as never, admin);
    expect(published).toEqual([{ tracking_database: 'mig' }, { tracking_database: 'mig' }]);
    expect(statusOf(await rejection(service.updateConfig({ copy_mappers: 3 } as never, admin)))).toBe(422);
    expect(published).toHaveLength(2);
    await service.updateConfig({} as never, admin);
    expect(published).toHaveLength(2);
  });
});
