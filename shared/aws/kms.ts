import { DecryptCommand, GenerateDataKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import type { Config } from '../config.js';
import { LocalKeyWrapper, SecretBox, type KeyWrapper } from '../secrets.js';
import { requestTimeouts } from './clients.js';

/** Data keys from KMS: generated with the stage's key, unwrapped by KMS on read. */
export class KmsKeyWrapper implements KeyWrapper {
  constructor(
    private readonly kms: KMSClient,
    private readonly keyId: string,
  ) {}

  async generateDataKey() {
    const out = await this.kms.send(new GenerateDataKeyCommand({ KeyId: this.keyId, KeySpec: 'AES_256' }));
    return {
      plaintext: Buffer.from(out.Plaintext!),
      wrapped: Buffer.from(out.CiphertextBlob!).toString('base64'),
    };
  }

  async unwrap(wrapped: string) {
    const out = await this.kms.send(
      new DecryptCommand({ KeyId: this.keyId, CiphertextBlob: Buffer.from(wrapped, 'base64') }),
    );
    return Buffer.from(out.Plaintext!);
  }
}

/** KMS when KMS_KEY_ID is set (AWS), else the local key file under DPM_DATA_DIR. */
export function secretBox(config: Pick<Config, 'kmsKeyId' | 'dataDir' | 'region'>): SecretBox {
  const wrapper = config.kmsKeyId
    ? new KmsKeyWrapper(new KMSClient({ region: config.region, requestHandler: requestTimeouts() }), config.kmsKeyId)
    : new LocalKeyWrapper(config.dataDir);
  return new SecretBox(wrapper);
}
