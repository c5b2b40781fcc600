import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { requestTimeouts } from './clients.js';

let client: SecretsManagerClient | undefined;
const values = new Map<string, Promise<string>>();

/**
 * A secret's value from Secrets Manager, read once per container: how deployed functions
 * get credentials that must not sit in their environment.
 */
export function secretValue(region: string, arn: string): Promise<string> {
  let value = values.get(arn);
  if (!value) {
    client ??= new SecretsManagerClient({ region, requestHandler: requestTimeouts() });
    value = client.send(new GetSecretValueCommand({ SecretId: arn })).then((out) => {
      if (typeof out.SecretString !== 'string') throw new Error(`secret ${arn} has no string value`);
      return out.SecretString;
    });
    // a failed read is tried again on the next call
    value.catch(() => values.delete(arn));
    values.set(arn, value);
  }
  return value;
}
