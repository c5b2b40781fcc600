/**
 * What KmsKeyWrapper uses of the KMS SDK, imported by name: it loads this module when a
 * secret is first sealed or opened (a dynamic import of the SDK itself would bundle every
 * KMS command).
 */
export { DecryptCommand, GenerateDataKeyCommand, KMSClient } from '@aws-sdk/client-kms';
