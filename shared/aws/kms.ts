import type { KMSClient } from '@aws-sdk/client-kms';
import type { Config } from '../config.js';
import { LocalKeyWrapper, SecretBox, type KeyWrapper } from '../secrets.js';
import { requestTimeouts } from './clients.js';

type KmsSdk = typeof import('./kms-sdk.js');

/** The KMS SDK, loaded when a secret is first sealed or opened, not at cold start. */
const loadSdk = (): Promise<KmsSdk> => import('./kms-sdk.js');

/**
 * Data keys from KMS: generated with the stage's key, unwrapped by KMS on read. The client
 * is a KMSClient, or made from the SDK on first use (what `secretBox` does).
 */
export class KmsKeyWrapper implements KeyWrapper {
  private client: Promise<{ kms: KMSClient; sdk: KmsSdk }> | undefined;

  constructor(
    private readonly kms: KMSClient | ((sdk: KmsSdk) => KMSClient),
    private readonly keyId: string,
  ) {}

  private sdk(): Promise<{ kms: KMSClient; sdk: KmsSdk }> {
    this.client ??= loadSdk().then((sdk) => ({
      sdk,
      kms: typeof this.kms === 'function' ? this.kms(sdk) : this.kms,
    }));
    return this.client;
  }

  async generateDataKey() {
    const { kms, sdk } = await this.sdk();
    const out = await kms.send(new sdk.GenerateDataKeyCommand({ KeyId: this.keyId, KeySpec: 'AES_256' }));
    return {
      plaintext: Buffer.from(out.Plaintext!),
      wrapped: Buffer.from(out.CiphertextBlob!).toString('base64'),
    };
  }

  async unwrap(wrapped: string) {
    const { kms, sdk } = await this.sdk();
    const out = await kms.send(
      new sdk.DecryptCommand({ KeyId: this.keyId, CiphertextBlob: Buffer.from(wrapped, 'base64') }),
    );
    return Buffer.from(out.Plaintext!);
  }
}

/** KMS when KMS_KEY_ID is set (AWS), else the local key file under DPM_DATA_DIR. */
export function secretBox(config: Pick<Config, 'kmsKeyId' | 'dataDir' | 'region'>): SecretBox {
  const { region, kmsKeyId } = config;
  const wrapper = kmsKeyId
    ? new KmsKeyWrapper((sdk) => new sdk.KMSClient({ region, requestHandler: requestTimeouts() }), kmsKeyId)
    : new LocalKeyWrapper(config.dataDir);
  return new SecretBox(wrapper);
}
