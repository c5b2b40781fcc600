/**
 * An identity provider's confidential clients with a service account (client-credentials
 * grant): what a data share hands out. Built in (DynamoDB) locally, Keycloak for real.
 */

/** A client as the identity provider holds it (the fields of spec 2.10). */
export interface IdpClient {
  /** The identity provider's internal id of the client (a UUID). */
  readonly id: string;
  /** The client id a caller presents to the token endpoint. */
  readonly client_id: string;
  readonly name: string;
  readonly enabled: boolean;
  readonly service_accounts_enabled: boolean;
  /** Null when the client has no secret or the provider would not reveal it. */
  readonly secret: string | null;
}

export interface NewIdpClient {
  readonly clientId: string;
  readonly name: string;
  readonly description?: string | null;
}

/**
 * Failures: `Conflict` when a client id is taken, `Unavailable` when the provider does
 * not answer (or answers with a server error). Nothing here ever logs a secret.
 */
export interface IdentityProvider {
  /** Creates an enabled confidential client with its service account enabled and a fresh secret. */
  createClient(client: NewIdpClient): Promise<IdpClient>;
  /** The client with its secret, or undefined when there is no such client. */
  getClient(clientId: string): Promise<IdpClient | undefined>;
  /** Replaces the client's secret; the old one stops working. Undefined when there is no such client. */
  regenerateSecret(clientId: string): Promise<IdpClient | undefined>;
  /** Removes the client; false when there was none. */
  deleteClient(clientId: string): Promise<boolean>;
}
