import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DecryptCommand, GenerateDataKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { secrets, createRuntime } from '../../functions/composition.js';
import { KmsKeyWrapper } from '../../shared/aws/kms.js';
import { loadConfig } from '../../shared/config.js';
import { LocalKeyWrapper, SecretBox } from '../../shared/secrets.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

const localBox = () => new SecretBox(new LocalKeyWrapper(mkdtempSync(join(tmpdir(), 'dpm-secrets-'))));

describe('SecretBox with the local key', () => {
  it('round-trips any secret, and never stores it in the clear', async () => {
    const box = localBox();
    await fc.assert(
      fc.asyncProperty(fc.string({ minLength: 1, maxLength: 200 }), async (raw) => {
        // long enough that finding it inside base64 by chance is out of the question
        const secret = `secret:${raw}:${'x'.repeat(16)}`;
        const sealed = await box.seal(secret, 'data-share:x');
        expect(JSON.stringify(sealed)).not.toContain(secret);
        expect(await box.open(sealed, 'data-share:x')).toBe(secret);
      }),
      { numRuns: 50 },
    );
  });

  it('uses a fresh data key and IV per record', async () => {
    const box = localBox();
    const a = await box.seal('same secret', 'ctx');
    const b = await box.seal('same secret', 'ctx');
    expect(a.key).not.toBe(b.key);
    expect(a.iv).not.toBe(b.iv);
    expect(a.data).not.toBe(b.data);
  });

  it('refuses a sealed value moved to another record or tampered with', async () => {
    const box = localBox();
    const sealed = await box.seal('s3cret-value', 'data-share:alpha');
    await expect(box.open(sealed, 'data-share:beta')).rejects.toThrow();
    const flipped = Buffer.from(sealed.data, 'base64');
    flipped[0] = flipped[0]! ^ 1;
    await expect(box.open({ ...sealed, data: flipped.toString('base64') }, 'data-share:alpha')).rejects.toThrow();
  });

  it('keeps its master key in <dataDir>/secret.key (owner-only) and reuses it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dpm-secrets-'));
    const sealed = await new SecretBox(new LocalKeyWrapper(dir)).seal('persisted', 'ctx');
    const file = join(dir, 'secret.key');
    expect(Buffer.from(readFileSync(file, 'utf8'), 'base64')).toHaveLength(32);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    // another process (a new wrapper) opens what the first sealed
    expect(await new SecretBox(new LocalKeyWrapper(dir)).open(sealed, 'ctx')).toBe('persisted');
  });

  it('picks the local key without KMS_KEY_ID', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dpm-secrets-'));
    const box = secrets(createRuntime(loadConfig({ DPM_DATA_DIR: dir })));
    expect(await box.open(await box.seal('x', 'c'), 'c')).toBe('x');
  });
});

describe('SecretBox with KMS', () => {
  it('asks KMS for a data key per record and to unwrap it on read', async () => {
    const kms = mockClient(KMSClient);
    const plaintext = Buffer.alloc(32, 7);
    kms
      .on(GenerateDataKeyCommand)
      .resolves({ Plaintext: new Uint8Array(plaintext), CiphertextBlob: new Uint8Array([1, 2, 3]) });
    kms.on(DecryptCommand).resolves({ Plaintext: new Uint8Array(plaintext) });
    const box = new SecretBox(
      new KmsKeyWrapper(new KMSClient({ region: 'us-east-1' }), 'arn:aws:kms:us-east-1:1:key/k'),
    );
    const sealed = await box.seal('client-secret', 'data-share:n');
    expect(sealed.key).toBe(Buffer.from([1, 2, 3]).toString('base64'));
    expect(await box.open(sealed, 'data-share:n')).toBe('client-secret');
    expect(kms.commandCalls(GenerateDataKeyCommand)[0]!.args[0].input).toMatchObject({
      KeyId: 'arn:aws:kms:us-east-1:1:key/k',
      KeySpec: 'AES_256',
    });
    expect(kms.commandCalls(DecryptCommand)).toHaveLength(1);
    kms.restore();
  });
});
