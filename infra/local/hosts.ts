/** Host names and addresses of the local platform. */

/** `host` as a URL's host part (IPv6 addresses in brackets). */
export const urlHost = (host: string): string => (host.includes(':') ? `[${host}]` : host);

/** A loopback IP address: `::1` or 127.x.x.x. */
export const isLoopbackAddress = (host: string): boolean => host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);

/** A loopback address, or the name `localhost`. */
export const isLoopback = (host: string): boolean => host === 'localhost' || isLoopbackAddress(host);
