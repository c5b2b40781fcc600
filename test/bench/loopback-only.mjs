/**
 * Preloaded (`node --import`) into every cold-start child of the benchmark (test/bench/cold-start.ts):
 * the child may connect to loopback addresses only. A connection anywhere else (an SDK client
 * without its emulator endpoint reaching for AWS, a credential provider reaching for the instance
 * metadata service) fails before any packet leaves, and says so on stderr, where the bench looks.
 * Host names are checked on what they resolve to, so no name can lead elsewhere.
 */
import { lookup as dnsLookup } from 'node:dns';
import net from 'node:net';

/** 127.0.0.0/8, ::1, and 127.0.0.0/8 mapped into IPv6. */
export function isLoopbackAddress(address) {
  const text = String(address)
    .toLowerCase()
    .replace(/^\[|\]$/g, '');
  if (text === '::1' || text === '0:0:0:0:0:0:0:1') return true;
  const v4 = text.startsWith('::ffff:') ? text.slice('::ffff:'.length) : text;
  return net.isIPv4(v4) && v4.startsWith('127.');
}

export const REFUSED_MARK = '@@refused-connection';

function refuse(socket, what) {
  process.stderr.write(`\n${REFUSED_MARK} ${what}\n`);
  const err = Object.assign(new Error(`cold-start child: no connection but to loopback (${what})`), {
    code: 'ECONNREFUSED',
  });
  process.nextTick(() => socket.destroy(err));
  return socket;
}

/** A lookup that hands on loopback answers only (dns.lookup's callback, single or `all`). */
const loopbackLookup = (inner) => (hostname, options, callback) => {
  const cb = typeof options === 'function' ? options : callback;
  const opts = typeof options === 'function' ? {} : options;
  inner(hostname, opts, (err, address, family) => {
    if (err) return cb(err);
    const all = Array.isArray(address) ? address.map((a) => a.address) : [address];
    const stray = all.find((a) => !isLoopbackAddress(a));
    if (stray !== undefined) {
      process.stderr.write(`\n${REFUSED_MARK} ${hostname} → ${stray}\n`);
      return cb(
        Object.assign(new Error(`cold-start child: ${hostname} resolves to ${stray}, not loopback`), {
          code: 'ECONNREFUSED',
        }),
      );
    }
    cb(null, address, family);
  });
};

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (...args) {
  // net.connect hands a normalized [options, callback] array; a direct call hands (options | port, host?, cb?) or (path, cb?).
  const normalized = Array.isArray(args[0]) ? args[0] : undefined;
  let options = normalized ? normalized[0] : args[0];
  if (typeof options !== 'object' || options === null) {
    const port = Number(options);
    if (typeof options === 'string' && Number.isNaN(port)) return connect.apply(this, args); // a local socket path
    options = { port, host: typeof args[1] === 'string' ? args[1] : 'localhost' };
    args = [options, ...args.slice(typeof args[1] === 'string' ? 2 : 1)];
  }
  if (options.path !== undefined) return connect.apply(this, args);
  const host = options.host ?? 'localhost';
  if (net.isIP(String(host).replace(/^\[|\]$/g, ''))) {
    if (!isLoopbackAddress(host)) return refuse(this, `${host}:${options.port}`);
  } else {
    options.lookup = loopbackLookup(options.lookup ?? dnsLookup);
  }
  return connect.apply(this, args);
};
