import type { KMSClient } from '@aws-sdk/client-kms';
import type { KeyWrapper } from '../secrets.js';
import { requestTimeouts } from './client-options.js';

type KmsSdk = typeof import('@aws-sdk/client-kms');

/**
 * The KMS SDK, loaded when a secret is first sealed or opened, not at cold start (in a
 * Lambda it comes from the runtime: RUNTIME_SDK_CLIENTS).
 */
const loadSdk = (): Promise<KmsSdk> => import('@aws-sdk/client-kms');

/**
 * Data keys from KMS: generated with the stage's key, unwrapped by KMS on read. The client
 * is a KMSClient, or made from the SDK on first use (what `kmsKeyWrapper` does).
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

/** The data keys wrapped by the KMS key `keyId` (its client loaded on first use). */
export function kmsKeyWrapper(region: string, keyId: string): KmsKeyWrapper {
  return new KmsKeyWrapper((sdk) => new sdk.KMSClient({ region, requestHandler: requestTimeouts() }), keyId);
}
