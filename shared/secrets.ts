import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * Envelope encryption for write-only secrets (client secrets, passwords): each record
 * gets its own AES-256-GCM data key; the data key is stored wrapped by a master key
 * (KMS on AWS, a local key file otherwise). The record's identity is bound in as
 * additional authenticated data, so a sealed value cannot be moved to another record.
 */
export interface KeyWrapper {
  generateDataKey(): Promise<{ plaintext: Buffer; wrapped: string }>;
  unwrap(wrapped: string): Promise<Buffer>;
}

/** A sealed secret as stored (all base64). */
export interface Sealed {
  readonly v: 1;
  readonly key: string;
  readonly iv: string;
  readonly tag: string;
  readonly data: string;
}

function gcmSeal(key: Buffer, plaintext: Buffer, aad: string) {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const data = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return { iv, tag: cipher.getAuthTag(), data };
}

function gcmOpen(key: Buffer, parts: { iv: Buffer; tag: Buffer; data: Buffer }, aad: string): Buffer {
  const decipher = createDecipheriv('aes-256-gcm', key, parts.iv);
  decipher.setAAD(Buffer.from(aad, 'utf8'));
  decipher.setAuthTag(parts.tag);
  return Buffer.concat([decipher.update(parts.data), decipher.final()]);
}

export class SecretBox {
  constructor(private readonly wrapper: KeyWrapper) {}

  /** Encrypts `secret` for the record named by `context` (e.g. `data-share:<name>`). */
  async seal(secret: string, context: string): Promise<Sealed> {
    const { plaintext, wrapped } = await this.wrapper.generateDataKey();
    try {
      const { iv, tag, data } = gcmSeal(plaintext, Buffer.from(secret, 'utf8'), context);
      return {
        v: 1,
        key: wrapped,
        iv: iv.toString('base64'),
        tag: tag.toString('base64'),
        data: data.toString('base64'),
      };
    } finally {
      plaintext.fill(0);
    }
  }

  async open(sealed: Sealed, context: string): Promise<string> {
    const key = await this.wrapper.unwrap(sealed.key);
    try {
      const parts = {
        iv: Buffer.from(sealed.iv, 'base64'),
        tag: Buffer.from(sealed.tag, 'base64'),
        data: Buffer.from(sealed.data, 'base64'),
      };
      return gcmOpen(key, parts, context).toString('utf8');
    } finally {
      key.fill(0);
    }
  }
}

/** The local master key: 32 random bytes in `<dataDir>/secret.key`, made on first use. */
export class LocalKeyWrapper implements KeyWrapper {
  private master: Buffer | undefined;

  constructor(private readonly dataDir: string) {}

  async generateDataKey() {
    const plaintext = randomBytes(32);
    const { iv, tag, data } = gcmSeal(this.masterKey(), plaintext, 'dpm-data-key');
    return { plaintext, wrapped: Buffer.concat([iv, tag, data]).toString('base64') };
  }

  async unwrap(wrapped: string) {
    const raw = Buffer.from(wrapped, 'base64');
    return gcmOpen(
      this.masterKey(),
      { iv: raw.subarray(0, 12), tag: raw.subarray(12, 28), data: raw.subarray(28) },
      'dpm-data-key',
    );
  }

  private masterKey(): Buffer {
    if (this.master) return this.master;
    const file = join(this.dataDir, 'secret.key');
    try {
      this.master = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
    } catch {
      const key = randomBytes(32);
      mkdirSync(dirname(file), { recursive: true });
      // wx: never overwrite a key another process wrote first
      try {
        writeFileSync(file, key.toString('base64'), { mode: 0o600, flag: 'wx' });
        this.master = key;
      } catch {
        this.master = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
      }
    }
    if (this.master.length !== 32) throw new Error(`${file} does not hold a 256-bit key`);
    return this.master;
  }
}
