/**
 * The configuration the Node proxy-server (`./server.ts`) reads from stdin, its ready line, and
 * its choice of source address. A bench and reference tool: the fleet's proxies are tinyproxy.
 */
import { isIP } from 'node:net';
import { z } from 'zod';
import { dnsLabel } from '../../shared/domain/names.js';

export const proxyProcessConfigSchema = z.strictObject({
  name: dnsLabel,
  host: z.string().min(1).max(64),
  port: z.number().int().min(1).max(65535),
  username: z.string().min(1).max(128),
  password: z.string().min(1).max(256),
  /** Source address for outgoing connections (the egress IP on a host with several). */
  localAddress: z.string().min(1).max(64).optional(),
});
/** What the backend writes to a proxy process's stdin. */
export type ProxyProcessConfig = z.infer<typeof proxyProcessConfigSchema>;

/** The line a proxy process prints on stdout once it listens, or when it cannot. */
export const readyLineSchema = z.union([
  z.object({ ready: z.literal(true), port: z.number().int() }),
  z.object({ ready: z.literal(false), error: z.string(), code: z.string().optional() }),
]);

/**
 * The source address one upstream connection uses. A routable `localAddress` is always the source;
 * a loopback one (the local stack's 127.1.x.y) only towards this host (`localhost`, 127.0.0.0/8),
 * since a socket bound to it cannot reach any other: other destinations leave it to the OS.
 *
 * @param destination - the host the client asked for (undefined when it could not be read)
 */
export function sourceFor(destination: string | undefined, localAddress: string | undefined): string | undefined {
  if (localAddress === undefined || !localAddress.startsWith('127.')) return localAddress;
  const host = destination?.toLowerCase().replace(/\.$/, '');
  const local = host === 'localhost' || (host !== undefined && isIP(host) === 4 && host.startsWith('127.'));
  return local ? localAddress : undefined;
}

/** The host a proxied request goes to: `host:port` of a CONNECT, the host of an absolute URI. */
export function destinationOf(method: string | undefined, url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  if (method === 'CONNECT') return url.slice(0, Math.max(0, url.lastIndexOf(':'))).replace(/^\[|\]$/g, '');
  try {
    return new URL(url).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return undefined;
  }
}
