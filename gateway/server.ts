/** The gateway's proxy endpoint: authenticates the client, then forwards requests and tunnels through the fleet. */
import http from 'node:http';
import net, { type AddressInfo, type Socket } from 'node:net';
import { isLoopbackAddress } from '../shared/domain/hosts.js';
import {
  credentialCheck,
  gatewayUrl,
  headerCheck,
  randomCredentials,
  type AuthResult,
  type GatewayCredentials,
} from './auth.js';
import type { Steering } from './grammar.js';
import { forwardHttp, gatewayError } from './http-forward.js';
import { DEFAULT_LEARNING, Learning } from './learning.js';
import { GatewayMetrics } from './metrics.js';
import { answerParseError, type ParseError } from './parse-errors.js';
import { FleetRouter, type RouterOptions } from './router.js';
import { ScopedRouters, WakeTimeoutError } from './scopes.js';
import { DemandReporter } from './demand.js';
import { serveSocks5 } from './socks5.js';
import { parseAuthority, routeTunnel, splice } from './tunnel.js';
import { UpstreamAgents } from './upstream-agents.js';

/** Where to listen: `host:port`. */
export interface ListenAddress {
  host: string;
  port: number;
}

export interface GatewayOptions extends RouterOptions {
  /** Default 127.0.0.1:8899; port 0 picks a free one. */
  listen?: ListenAddress;
  /** The credentials clients must present; random when absent. */
  credentials?: GatewayCredentials;
  /** Target statuses that mean "this egress is banned here" (plain HTTP only). */
  banOn?: readonly number[];
  /**
   * Serve `GET /metrics` (Prometheus text) on this separate listener: a scraper sends no proxy
   * credentials, and the proxy port may face the network while this stays on loopback.
   */
  metrics?: ListenAddress;
  /** Dial and CONNECT answer of a fleet proxy (default 5 s). */
  connectTimeoutMs?: number;
  /** A plain request's response head after connecting (default 60 s). */
  responseTimeoutMs?: number;
  /** How long a request for a pool with no Ready member is held while the pool wakes (default 120 s). */
  wakeTimeoutMs?: number;
  /** How often demand is reported to the API (default 5 s). */
  demandIntervalMs?: number;
  /**
   * SOCKS5 clients from these loopback addresses may connect without credentials (Chromium sends
   * none); default none. Each must be a loopback address.
   */
  socksNoAuthFrom?: readonly string[];
}

export interface Gateway {
  /** `http://USER:PASS@host:port`, ready to give to curl -x, requests, Scrapy or a browser. */
  url: string;
  address: ListenAddress;
  credentials: GatewayCredentials;
  /** `http://host:port/metrics`, when `metrics` was given. */
  metricsUrl: string | undefined;
  /** The usage counters of every router of this gateway. */
  metrics: GatewayMetrics;
  router: FleetRouter;
  /** What the gateway learnt of each fleet proxy's connections (`keepsAlive`). */
  upstreams: UpstreamAgents;
  close(): Promise<void>;
}

const CHALLENGE = 'Basic realm="egress gateway"';
const ESTABLISHED = 'HTTP/1.1 200 Connection Established\r\n\r\n';

function listen(server: net.Server, at: ListenAddress): Promise<ListenAddress> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(at.port, at.host, () => {
      server.off('error', reject);
      resolve({ host: at.host, port: (server.address() as AddressInfo).port });
    });
  });
}

/** The address a socket's peer has, as the allow-list spells it (IPv4-mapped IPv6 unwrapped). */
function plainAddress(address: string | undefined): string {
  return (address ?? '').replace(/^::ffff:(?=\d+\.)/, '');
}

/**
 * Starts the gateway: loads the Ready list (throws when the API is unreachable), then listens.
 *
 * @example
 * const gw = await startGateway({ fleet: createFleetApi({ apiUrl, token }), listen: { host: '127.0.0.1', port: 8899 } });
 * console.log(gw.url); // http://USER:PASS@127.0.0.1:8899
 */
export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const credentials = options.credentials ?? randomCredentials();
  const check = headerCheck(credentials);
  for (const address of options.socksNoAuthFrom ?? [])
    if (!isLoopbackAddress(address))
      throw new Error(`socksNoAuthFrom: ${JSON.stringify(address)} is not a loopback address`);
  const noAuthFrom = new Set(options.socksNoAuthFrom ?? []);
  const banOn = new Set(options.banOn ?? []);
  const forward = {
    banOn,
    connectTimeoutMs: options.connectTimeoutMs ?? 5000,
    responseTimeoutMs: options.responseTimeoutMs ?? 60_000,
  };
  const now = options.now ?? Date.now;
  const demand = options.fleet.demand
    ? new DemandReporter(options.fleet, { intervalMs: options.demandIntervalMs, logger: options.logger, now })
    : undefined;
  demand?.start();
  const shared = {
    ...options,
    ...(demand && { demand }),
    learning: options.learning ?? new Learning(DEFAULT_LEARNING, now),
    counters: options.counters ?? new GatewayMetrics(),
  };
  const router = new FleetRouter(shared);
  await router.start();
  const scopes = new ScopedRouters(router, shared);
  const agents = new UpstreamAgents(forward.connectTimeoutMs);
  const prune = setInterval(() => agents.prune(router.selector.upstreams()), 10_000);
  prune.unref();
  const log = options.logger;

  /** The response of the request each connection is reading, so a parse error in its body knows whether one started. */
  const responding = new WeakMap<Socket, http.ServerResponse>();
  const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    responding.set(req.socket, res);
    res.once('finish', () => responding.delete(req.socket));
    if (req.httpVersionMajor !== 1) {
      router.metrics.failure();
      return gatewayError(res, 505, `HTTP/${req.httpVersion} is not forwarded; send HTTP/1.1 (or 1.0)`);
    }
    const auth = check(req.headers['proxy-authorization']);
    if (!auth.ok) {
      router.metrics.failure();
      res.setHeader('Proxy-Authenticate', CHALLENGE);
      return gatewayError(res, 407, refusal(auth));
    }
    scopes
      .get(auth.steering)
      .then(
        (scoped) => forwardHttp(scoped, agents, req, res, auth.steering, forward),
        (err: unknown) => {
          router.metrics.failure();
          if (err instanceof WakeTimeoutError) {
            res.setHeader('Retry-After', String(err.retryAfterSeconds));
            return gatewayError(res, 503, err.message);
          }
          res.setHeader('Proxy-Authenticate', CHALLENGE);
          gatewayError(res, 407, err instanceof Error ? err.message : String(err));
        },
      )
      .catch((err: unknown) => {
        log?.error('forwarding failed', { error: err });
        gatewayError(res, 502, 'internal error while forwarding');
      });
  });
  const tunnels = new Set<Socket>();
  server.on('connect', connectHandler(router, scopes, check, forward.connectTimeoutMs, tunnels));
  server.on('clientError', (err: ParseError, socket: Socket) => {
    router.metrics.failure();
    answerParseError(err, socket, responding.get(socket));
  });
  const socks = {
    check: credentialCheck(credentials),
    noAuth: (remote: string | undefined) => noAuthFrom.has(plainAddress(remote)),
    routerFor: (steering: Steering) => scopes.get(steering),
    connectTimeoutMs: forward.connectTimeoutMs,
    onRefused: () => router.metrics.failure(),
  };
  // One listener for both protocols: a SOCKS5 client's first byte is its version, 5; an HTTP
  // request's first byte is a method's first letter.
  const front = net.createServer((socket) => {
    tunnels.add(socket);
    socket.once('close', () => tunnels.delete(socket));
    socket.once('error', () => socket.destroy());
    socket.once('data', (first: Buffer) => {
      socket.pause();
      socket.unshift(first);
      if (first[0] === 0x05) serveSocks5(socket, socks);
      else server.emit('connection', socket);
      socket.resume();
    });
  });
  const address = await listen(front, options.listen ?? { host: '127.0.0.1', port: 8899 });
  // The HTTP server never listens itself: 'listening' starts its connection tracking (the
  // header and request timeouts, closeAllConnections) for the sockets handed to it.
  server.emit('listening');

  const metrics = options.metrics ? await startMetrics(shared.counters, options.metrics) : undefined;
  return {
    url: gatewayUrl(credentials, address.host, address.port),
    address,
    credentials,
    metricsUrl: metrics?.url,
    metrics: shared.counters,
    router,
    upstreams: agents,
    async close() {
      demand?.stop();
      router.stop();
      scopes.stop();
      clearInterval(prune);
      const closed = new Promise<void>((resolve) => front.close(() => resolve()));
      server.close(() => undefined);
      server.closeAllConnections();
      for (const socket of tunnels) socket.destroy();
      agents.destroy();
      metrics?.server.close();
      metrics?.server.closeAllConnections();
      await closed;
    },
  };
}

/** The 407 body: the grammar error when the credentials were right, else the generic refusal. */
function refusal(auth: AuthResult): string {
  return (!auth.ok && auth.grammar?.message) || 'proxy authentication required (the credentials of the gateway URL)';
}

/**
 * The CONNECT handler: authenticates, routes the tunnel through a fleet proxy (with failover), and
 * splices the two sockets; a refusal is a complete HTTP answer and a close.
 */
function connectHandler(
  router: FleetRouter,
  scopes: ScopedRouters,
  check: (header: string | undefined) => AuthResult,
  connectTimeoutMs: number,
  tunnels: Set<Socket>,
): (req: http.IncomingMessage, client: Socket, head: Buffer) => void {
  return (req, client, head) => {
    tunnels.add(client);
    client.once('close', () => tunnels.delete(client));
    client.on('error', () => client.destroy());
    const refuse = (status: string, message: string, extra = '') => {
      router.metrics.failure();
      const body = `egress gateway: ${message}\n`;
      client.end(
        `HTTP/1.1 ${status}\r\n${extra}Content-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    };
    const challenge = `Proxy-Authenticate: ${CHALLENGE}\r\n`;
    const auth = check(req.headers['proxy-authorization']);
    if (!auth.ok) return refuse('407 Proxy Authentication Required', refusal(auth), challenge);
    const target = parseAuthority(req.url ?? '');
    if (!target) return refuse('400 Bad Request', `CONNECT needs host:port, got ${JSON.stringify(req.url ?? '')}`);
    const authority = req.url ?? '';
    void scopes.get(auth.steering).then(
      async (scoped) => {
        const { routed } = await routeTunnel(scoped, auth.steering, target, client, connectTimeoutMs);
        if (!routed.ok)
          return refuse(
            '502 Bad Gateway',
            `no fleet proxy could open a tunnel to ${authority}: ${routed.reasons.join('; ')}`,
          );
        if (client.destroyed) return routed.value.socket.destroy();
        const use = { proxy: routed.upstream.name, domain: target.host, session: auth.steering.session };
        splice(scoped.metrics, client, head, routed.value, use, ESTABLISHED);
      },
      (err: unknown) =>
        err instanceof WakeTimeoutError
          ? refuse('503 Service Unavailable', err.message, `Retry-After: ${err.retryAfterSeconds}\r\n`)
          : refuse('407 Proxy Authentication Required', err instanceof Error ? err.message : String(err), challenge),
    );
  };
}

/** Serves `GET /metrics` (the gateway's Prometheus text) at `at`. */
async function startMetrics(
  counters: GatewayMetrics,
  at: ListenAddress,
): Promise<{ server: http.Server; url: string }> {
  const server = http.createServer((req, res) => {
    if (new URL(req.url ?? '/', 'http://metrics').pathname !== '/metrics')
      return gatewayError(res, 404, 'metrics are at /metrics');
    if (req.method !== 'GET' && req.method !== 'HEAD') return gatewayError(res, 405, 'GET /metrics');
    counters.text().then(
      (text) => res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }).end(text),
      (err: unknown) => gatewayError(res, 500, `metrics collection failed: ${String(err)}`),
    );
  });
  const bound = await listen(server, at);
  return { server, url: `http://${bound.host.includes(':') ? `[${bound.host}]` : bound.host}:${bound.port}/metrics` };
}
