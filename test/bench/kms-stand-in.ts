import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * KMS's two calls that SecretBox makes (shared/aws/kms.ts), answered on loopback the way KMS
 * answers them: the AWS JSON 1.1 protocol (`POST /`, `X-Amz-Target: TrentService.<operation>`),
 * base64 blobs, KMS's error shapes. Neither DynamoDB Local nor fauxqs has KMS, and no KMS
 * emulator is installed here, so the benchmark's cold starts reach this instead: the Lambda's
 * own KMS client (`@aws-sdk/client-kms`, loaded on first use) signs and sends its real
 * commands to it, through the SDK's standard `AWS_ENDPOINT_URL_KMS`. Data keys are wrapped with
 * AES-256-GCM under a key that lives as long as the stand-in. Signatures are not checked.
 */
export interface KmsStandIn {
  readonly endpoint: string;
  /** The key ARN that KMS_KEY_ID names; any key id is accepted. */
  readonly keyArn: string;
  stop(): Promise<void>;
}

const KEY_ARN = 'arn:aws:kms:us-east-1:123456789012:key/00000000-0000-4000-8000-000000000000';

export async function startKmsStandIn(onCall: (operation: string) => void = () => {}): Promise<KmsStandIn> {
  const master = randomBytes(32);
  const wrap = (plaintext: Buffer) => {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', master, iv);
    const data = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), data]);
  };
  const unwrap = (blob: Buffer) => {
    const decipher = createDecipheriv('aes-256-gcm', master, blob.subarray(0, 12));
    decipher.setAuthTag(blob.subarray(12, 28));
    return Buffer.concat([decipher.update(blob.subarray(28)), decipher.final()]);
  };
  const answer = (operation: string, input: Record<string, unknown>): [number, Record<string, unknown>] => {
    if (operation === 'GenerateDataKey') {
      const bytes = input.KeySpec === 'AES_128' ? 16 : Number(input.NumberOfBytes ?? 32);
      const plaintext = randomBytes(bytes);
      return [
        200,
        {
          KeyId: KEY_ARN,
          Plaintext: plaintext.toString('base64'),
          CiphertextBlob: wrap(plaintext).toString('base64'),
        },
      ];
    }
    if (operation === 'Decrypt') {
      try {
        const plaintext = unwrap(Buffer.from(String(input.CiphertextBlob), 'base64'));
        return [
          200,
          { KeyId: KEY_ARN, Plaintext: plaintext.toString('base64'), EncryptionAlgorithm: 'SYMMETRIC_DEFAULT' },
        ];
      } catch {
        return [400, { __type: 'InvalidCiphertextException', message: 'the ciphertext is not one of this key' }];
      }
    }
    return [400, { __type: 'UnsupportedOperationException', message: `${operation} is not answered here` }];
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const operation = String(req.headers['x-amz-target'] ?? '').replace(/^TrentService\./, '');
      onCall(operation);
      let input: Record<string, unknown> = {};
      try {
        input = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
      } catch {
        // an unreadable body answers as an unknown operation would
      }
      const [status, body] = answer(operation, input);
      res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1', 'x-amzn-requestid': 'kms-stand-in' });
      res.end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    keyArn: KEY_ARN,
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
