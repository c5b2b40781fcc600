import { Unauthenticated } from '../errors.js';
import type { Caller } from './caller.js';
import type { JwtVerifier } from './jwt.js';
import type { PskVerifier } from './psk.js';

/** Resolves the caller from `Authorization: Bearer` or `Authorization-PSK`. */
export class Authenticator {
  constructor(
    private readonly jwt: JwtVerifier,
    private readonly psk: PskVerifier,
  ) {}

  async authenticate(headers: { authorization?: string | undefined; psk?: string | undefined }): Promise<Caller> {
    const authorization = headers.authorization?.trim();
    if (authorization) {
      const match = /^Bearer\s+(\S+)$/i.exec(authorization);
      if (!match) throw new Unauthenticated('Authorization header must be "Bearer <token>"');
      return this.jwt.verify(match[1]!);
    }
    const psk = headers.psk?.trim();
    if (psk) return this.psk.verify(psk);
    throw new Unauthenticated();
  }
}

/** What an app needs of authentication (tests hand it a fake caller). */
export type RequestAuthenticator = Pick<Authenticator, 'authenticate'>;
