/**
 * Preloaded (`node --import`, through NODE_OPTIONS) into a local platform a test starts with
 * a HOST beyond loopback (test/integration/local/local-network.test.ts): a listen on anything
 * but a loopback address, or on no address (every one), ends the process before it binds,
 * saying so on stderr. The start is to refuse such a HOST before it listens; were it not to,
 * the test fails and still nothing was reachable from another machine. Listens on a local
 * socket path or an inherited handle are let through.
 */
import net from 'node:net';

export const REFUSED_LISTEN_MARK = '@@refused-listen';
/** The exit code of a process that tried to listen beyond loopback. */
export const REFUSED_LISTEN_EXIT = 86;

/** The name localhost, 127.0.0.0/8, ::1, and 127.0.0.0/8 mapped into IPv6. */
function isLoopbackHost(host) {
  const text = String(host)
    .toLowerCase()
    .replace(/^\[|\]$/g, '');
  if (text === 'localhost' || text === '::1' || text === '0:0:0:0:0:0:0:1') return true;
  const v4 = text.startsWith('::ffff:') ? text.slice('::ffff:'.length) : text;
  return net.isIPv4(v4) && v4.startsWith('127.');
}

/**
 * Where a listen with these arguments binds beyond loopback ('every address' when it names
 * none), or undefined when it stays on this machine. server.listen takes (port?, host?,
 * backlog?, callback?), (path, ...), (handle, ...) or (options, callback?).
 */
export function beyondLoopback(args) {
  const [first, second] = args;
  let host;
  if (typeof first === 'object' && first !== null) {
    if (first.path !== undefined) return undefined;
    // A handle (a server, a socket, `{fd}`) was bound by whoever made it.
    if (
      first.port === undefined &&
      (first.fd !== undefined || first._handle !== undefined || first.handle !== undefined)
    )
      return undefined;
    host = first.host;
  } else {
    if (typeof first === 'string' && Number.isNaN(Number(first))) return undefined; // a local socket path
    host = typeof second === 'string' ? second : undefined;
  }
  if (host === undefined || host === '') return 'every address';
  return isLoopbackHost(host) ? undefined : String(host);
}

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const where = beyondLoopback(args);
  if (where !== undefined) {
    process.stderr.write(`\n${REFUSED_LISTEN_MARK} ${where}\n`);
    process.exit(REFUSED_LISTEN_EXIT);
  }
  return listen.apply(this, args);
};
