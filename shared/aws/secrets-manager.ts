import { requestTimeouts } from './client-options.js';

let reader: Promise<(arn: string) => Promise<string>> | undefined;
const values = new Map<string, Promise<string>>();

/**
 * The client, loaded on first use: a Lambda bundle leaves the SDK module out (it comes from
 * the Lambda runtime, see RUNTIME_SDK_CLIENTS), and a dynamic import keeps it from being
 * loaded at every cold start, which a static import of an external module would do.
 */
function secretReader(region: string) {
  reader ??= import('@aws-sdk/client-secrets-manager').then(({ SecretsManagerClient, GetSecretValueCommand }) => {
    const sdk = new SecretsManagerClient({ region, requestHandler: requestTimeouts() });
    return async (arn: string) => {
      const out = await sdk.send(new GetSecretValueCommand({ SecretId: arn }));
      if (typeof out.SecretString !== 'string') throw new Error(`secret ${arn} has no string value`);
      return out.SecretString;
    };
  });
  return reader;
}

/**
 * A secret's value from Secrets Manager, read once per container: how deployed functions
 * get credentials that must not sit in their environment.
 */
export function secretValue(region: string, arn: string): Promise<string> {
  let value = values.get(arn);
  if (!value) {
    value = secretReader(region).then((read) => read(arn));
    // a failed read is tried again on the next call
    value.catch(() => values.delete(arn));
    values.set(arn, value);
  }
  return value;
}
