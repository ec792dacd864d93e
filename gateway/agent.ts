/**
 * The gateway's selection and failover for Node code, without a listening endpoint: an `http.Agent`
 * (or `https.Agent`) whose every new connection is a CONNECT tunnel through a Ready fleet proxy,
 * retried on another proxy when one refuses, times out or fails at its hop.
 */
import http from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import type { FleetRouter } from './router.js';
import { connectThrough } from './tunnel.js';

export interface FleetAgentOptions {
  /** Keep every connection of this agent on one fleet proxy while it stays Ready. */
  session?: string;
  /** Dial and CONNECT answer of a fleet proxy (default 5 s). */
  connectTimeoutMs?: number;
  /** Reuse connections (default false: a new connection, so a new proxy, per request). */
  keepAlive?: boolean;
}

type Callback = (err: Error | null, socket: Duplex) => void;

function tunnelTo(
  router: FleetRouter,
  options: FleetAgentOptions,
  host: string,
  port: number,
  callback: (err: Error | null, socket?: import('node:net').Socket) => void,
): void {
  const authority = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  router
    .route({ session: options.session, domain: host }, (u) =>
      connectThrough(u, authority, options.connectTimeoutMs ?? 5000),
    )
    .then((routed) => {
      if (!routed.ok)
        return callback(new Error(`no fleet proxy could open a tunnel to ${authority}: ${routed.reasons.join('; ')}`));
      const { socket, head } = routed.value;
      const use = { proxy: routed.upstream.name, domain: host, session: options.session };
      socket.once('close', () => router.metrics.bytes(use, socket.bytesRead, socket.bytesWritten));
      if (head.length > 0) socket.unshift(head);
      socket.resume();
      callback(null, socket);
    })
    .catch((err: unknown) => callback(err instanceof Error ? err : new Error(String(err))));
}

/**
 * An agent for `http.request` / `http.get` (plain HTTP to the target, tunnelled).
 *
 * @example
 * const router = new FleetRouter({ fleet: createFleetApi({ apiUrl, token }) });
 * await router.start();
 * http.get('http://example.com/', { agent: createFleetAgent(router) }, (res) => res.pipe(process.stdout));
 */
export function createFleetAgent(router: FleetRouter, options: FleetAgentOptions = {}): http.Agent {
  const agent = new http.Agent({ keepAlive: options.keepAlive ?? false });
  agent.createConnection = (opts: http.ClientRequestArgs, callback?: Callback) => {
    tunnelTo(router, options, opts.hostname ?? opts.host ?? 'localhost', Number(opts.port ?? 80), (err, socket) =>
      // Node's Agent takes the socket from the callback when createConnection returns nothing.
      callback?.(err, socket as Duplex),
    );
    return undefined;
  };
  return agent;
}

/**
 * An agent for `https.request` / `https.get`: TLS to the target inside the tunnel (no MITM).
 *
 * @example
 * https.get('https://example.com/', { agent: createFleetHttpsAgent(router, { session: 'crawl-7' }) }, onResponse);
 */
export function createFleetHttpsAgent(router: FleetRouter, options: FleetAgentOptions = {}): https.Agent {
  const agent = new https.Agent({ keepAlive: options.keepAlive ?? false });
  agent.createConnection = (opts: https.RequestOptions & tls.ConnectionOptions, callback?: Callback) => {
    const host = opts.hostname ?? opts.host ?? 'localhost';
    tunnelTo(router, options, host, Number(opts.port ?? 443), (err, socket) => {
      if (err || !socket) return callback?.(err ?? new Error('no tunnel'), undefined as unknown as Duplex);
      const secure = tls.connect({ ...opts, socket, servername: opts.servername ?? (isIp(host) ? undefined : host) });
      // Errors after the handshake belong to the request using the socket, not to this callback.
      const onError = (e: Error) => callback?.(e, secure);
      secure.once('error', onError);
      secure.once('secureConnect', () => {
        secure.off('error', onError);
        callback?.(null, secure);
      });
    });
    return undefined;
  };
  return agent;
}

const isIp = (host: string) => /^[\d.]+$/.test(host) || host.includes(':');
