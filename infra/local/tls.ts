import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createPrivateKey, webcrypto, X509Certificate } from 'node:crypto';
import { join } from 'node:path';

/**
 * The local platform's TLS certificate (docs/sdk.md, connecting over HTTPS): self-signed for the
 * loopback names, made at the first start and kept in the data directory, so that a client
 * that trusts it once (`REQUESTS_CA_BUNDLE`) keeps trusting it after every restart.
 */

/** The certificate (PEM): what a client trusts. */
export const TLS_CERT_FILE = 'tls-cert.pem';
/** Its private key (PKCS#8 PEM, mode 0600). */
export const TLS_KEY_FILE = 'tls-key.pem';
/** The names the certificate is for (subjectAltName): the loopback addresses and `localhost`. */
export const TLS_DNS_NAMES: readonly string[] = ['localhost'];
export const TLS_IP_ADDRESSES: readonly string[] = ['127.0.0.1', '::1'];

/** 825 days: the longest validity macOS and iOS accept for a certificate a user trusts by hand. */
const VALIDITY_DAYS = 825;
/** A kept certificate this close to its end (or past it) is replaced at start-up. */
const RENEW_BEFORE_DAYS = 7;
const DAY_MS = 86_400_000;

export interface LocalCertificate {
  readonly certFile: string;
  readonly keyFile: string;
  /** The certificate, PEM. */
  readonly cert: string;
  /** The private key, PEM. */
  readonly key: string;
  /** SHA-256 fingerprint, as `openssl x509 -fingerprint -sha256` prints it. */
  readonly fingerprint256: string;
  readonly validTo: Date;
  /**
   * Why this start made a new certificate (`'none kept'`, or what was wrong with the kept
   * one); undefined when the kept one is used.
   */
  readonly created: string | undefined;
}

/**
 * The certificate kept in `dataDir`, or a new one when there is none or it cannot serve
 * (unreadable, key and certificate not a pair, a name missing, expiring): written key first,
 * each file through a temporary one and a rename, so that a kill mid-way never leaves half
 * a file. The key file is (made again) mode 0600.
 */
export async function ensureLocalCertificate(dataDir: string, now: Date = new Date()): Promise<LocalCertificate> {
  const certFile = join(dataDir, TLS_CERT_FILE);
  const keyFile = join(dataDir, TLS_KEY_FILE);
  const kept = readKept(certFile, keyFile, now);
  if (kept.ok) {
    if ((statSync(keyFile).mode & 0o077) !== 0) chmodSync(keyFile, 0o600);
    return { certFile, keyFile, ...kept.pair, ...describe(kept.pair.cert), created: undefined };
  }
  const pair = await generateCertificate(now);
  mkdirSync(dataDir, { recursive: true });
  writeAtomically(keyFile, pair.key, 0o600);
  writeAtomically(certFile, pair.cert, 0o644);
  return { certFile, keyFile, ...pair, ...describe(pair.cert), created: kept.why };
}

type Kept = { ok: true; pair: { cert: string; key: string } } | { ok: false; why: string };

function readKept(certFile: string, keyFile: string, now: Date): Kept {
  let cert: string;
  let key: string;
  try {
    cert = readFileSync(certFile, 'utf8');
    key = readFileSync(keyFile, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { ok: false, why: code === 'ENOENT' ? 'none kept' : `the kept one could not be read (${code})` };
  }
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
    if (!x509.checkPrivateKey(createPrivateKey(key))) return { ok: false, why: 'the kept key does not match it' };
  } catch {
    return { ok: false, why: 'the kept one is not a valid PEM certificate and key' };
  }
  if (new Date(x509.validTo).getTime() - now.getTime() < RENEW_BEFORE_DAYS * DAY_MS) {
    return { ok: false, why: `the kept one expires on ${new Date(x509.validTo).toISOString()}` };
  }
  const missing = [
    ...TLS_DNS_NAMES.filter((name) => x509.checkHost(name, { subject: 'never' }) === undefined),
    ...TLS_IP_ADDRESSES.filter((ip) => x509.checkIP(ip) === undefined),
  ];
  if (missing.length > 0) return { ok: false, why: `the kept one is not for ${missing.join(', ')}` };
  return { ok: true, pair: { cert, key } };
}

function describe(cert: string): { fingerprint256: string; validTo: Date } {
  const x509 = new X509Certificate(cert);
  return { fingerprint256: x509.fingerprint256, validTo: new Date(x509.validTo) };
}

function writeAtomically(file: string, text: string, mode: number): void {
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, text, { mode });
    // The mode is masked by the umask at creation: set it as meant.
    chmodSync(tmp, mode);
    renameSync(tmp, file);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

/**
 * A new ECDSA P-256 key and a self-signed certificate for the loopback names. It is its
 * own trust anchor (a client trusts this file itself): a CA certificate (basic constraints,
 * key usage with keyCertSign, subject and authority key identifiers, as `openssl req -x509`
 * makes) that also says serverAuth, which strict verifiers (Python 3.13's default context,
 * X509_STRICT) accept as well as requests, curl and Node.
 */
async function generateCertificate(now: Date): Promise<{ cert: string; key: string }> {
  // @peculiar/x509 resolves its algorithms through tsyringe, which needs the Reflect
  // metadata API; loaded only when a certificate is made.
  await import('reflect-metadata');
  const x509 = await import('@peculiar/x509');
  // Node's WebCrypto, which @peculiar/x509 also takes by default (globalThis.crypto).
  const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: Buffer.from(webcrypto.getRandomValues(new Uint8Array(16)))
      .toString('hex')
      // positive (RFC 5280 section 4.1.2.2): the first bit clear
      .replace(/^./, (d) => (parseInt(d, 16) & 0x7).toString(16)),
    name: 'CN=localhost, O=Data Platform Management Service (local)',
    // An hour back: a client whose clock is a little behind still accepts it.
    notBefore: new Date(now.getTime() - 3_600_000),
    notAfter: new Date(now.getTime() + VALIDITY_DAYS * DAY_MS),
    signingAlgorithm: algorithm,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyCertSign, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([
        ...TLS_DNS_NAMES.map((value) => ({ type: 'dns' as const, value })),
        ...TLS_IP_ADDRESSES.map((value) => ({ type: 'ip' as const, value })),
      ]),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey);
  const key = createPrivateKey({ key: Buffer.from(pkcs8), format: 'der', type: 'pkcs8' });
  return { cert: cert.toString('pem') + '\n', key: key.export({ format: 'pem', type: 'pkcs8' }) as string };
}
