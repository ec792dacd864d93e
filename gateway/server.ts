/** The gateway's proxy endpoint: authenticates the client, then forwards requests and tunnels through the fleet. */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { credentialCheck, gatewayUrl, randomCredentials, type AuthResult, type GatewayCredentials } from './auth.js';
import { forwardHttp, gatewayError } from './http-forward.js';
import { answerParseError, type ParseError } from './parse-errors.js';
import { FleetRouter, type RouterOptions } from './router.js';
import { connectThrough, parseAuthority, type Tunnel } from './tunnel.js';
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
  /** Serve `GET /metrics` (Prometheus text) here. */
  metrics?: ListenAddress;
  /** Dial and CONNECT answer of a fleet proxy (default 5 s). */
  connectTimeoutMs?: number;
  /** A plain request's response head after connecting (default 60 s). */
  responseTimeoutMs?: number;
}

export interface Gateway {
  /** `http://USER:PASS@host:port`, ready to give to curl -x, requests, Scrapy or a browser. */
  url: string;
  address: ListenAddress;
  credentials: GatewayCredentials;
  /** `http://host:port/metrics`, when `metrics` was given. */
  metricsUrl: string | undefined;
  router: FleetRouter;
  /** What the gateway learnt of each fleet proxy's connections (`keepsAlive`). */
  upstreams: UpstreamAgents;
  close(): Promise<void>;
}

const CHALLENGE = 'Basic realm="egress gateway"';

function listen(server: http.Server, at: ListenAddress): Promise<ListenAddress> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(at.port, at.host, () => {
      server.off('error', reject);
      resolve({ host: at.host, port: (server.address() as AddressInfo).port });
    });
  });
}

/** Splices an established tunnel to the client and counts its bytes when it ends. */
function splice(router: FleetRouter, client: Socket, head: Buffer, tunnel: Tunnel, proxy: string, session?: string) {
  const upstream = tunnel.socket;
  const end = () => {
    client.destroy();
    upstream.destroy();
  };
  upstream.on('error', end);
  client.on('error', end);
  upstream.once('close', () => {
    router.metrics.bytes(proxy, session, upstream.bytesRead, upstream.bytesWritten);
    client.destroy();
  });
  client.once('close', () => upstream.destroy());
  client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
  if (tunnel.head.length > 0) client.write(tunnel.head);
  if (head.length > 0) upstream.write(head);
  upstream.pipe(client);
  client.pipe(upstream);
  upstream.resume();
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
  const check = credentialCheck(credentials);
  const banOn = new Set(options.banOn ?? []);
  const forward = {
    banOn,
    connectTimeoutMs: options.connectTimeoutMs ?? 5000,
    responseTimeoutMs: options.responseTimeoutMs ?? 60_000,
  };
  const router = new FleetRouter(options);
  await router.start();
  const agents = new UpstreamAgents();
  const prune = setInterval(() => agents.prune(router.selector.upstreams()), 10_000);
  prune.unref();
  const log = options.logger;

  /** The response of the request each connection is reading, so a parse error in its body knows whether one started. */
  const responding = new WeakMap<Socket, http.ServerResponse>();
  const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    responding.set(req.socket, res);
    res.once('finish', () => responding.delete(req.socket));
    if (req.httpVersionMajor !== 1) {
      router.metrics.gatewayError();
      return gatewayError(res, 505, `HTTP/${req.httpVersion} is not forwarded; send HTTP/1.1 (or 1.0)`);
    }
    const auth = check(req.headers['proxy-authorization']);
    if (!auth.ok) {
      router.metrics.gatewayError();
      res.setHeader('Proxy-Authenticate', CHALLENGE);
      return gatewayError(res, 407, 'proxy authentication required (the credentials of the gateway URL)');
    }
    forwardHttp(router, agents, req, res, auth.session, forward).catch((err: unknown) => {
      log?.error('forwarding failed', { error: err });
      gatewayError(res, 502, 'internal error while forwarding');
    });
  });
  const tunnels = new Set<Socket>();
  server.on('connect', connectHandler(router, check, forward.connectTimeoutMs, tunnels));
  server.on('clientError', (err: ParseError, socket: Socket) => {
    router.metrics.gatewayError();
    answerParseError(err, socket, responding.get(socket));
  });
  const address = await listen(server, options.listen ?? { host: '127.0.0.1', port: 8899 });

  const metrics = options.metrics ? await startMetrics(router, options.metrics) : undefined;
  return {
    url: gatewayUrl(credentials, address.host, address.port),
    address,
    credentials,
    metricsUrl: metrics?.url,
    router,
    upstreams: agents,
    async close() {
      router.stop();
      clearInterval(prune);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      for (const socket of tunnels) socket.destroy();
      agents.destroy();
      metrics?.server.close();
      metrics?.server.closeAllConnections();
      await closed;
    },
  };
}

/**
 * The CONNECT handler: authenticates, routes the tunnel through a fleet proxy (with failover), and
 * splices the two sockets; a refusal is a complete HTTP answer and a close.
 */
function connectHandler(
  router: FleetRouter,
  check: (header: string | undefined) => AuthResult,
  connectTimeoutMs: number,
  tunnels: Set<Socket>,
): (req: http.IncomingMessage, client: Socket, head: Buffer) => void {
  return (req, client, head) => {
    tunnels.add(client);
    client.once('close', () => tunnels.delete(client));
    client.on('error', () => client.destroy());
    const refuse = (status: string, message: string, extra = '') => {
      router.metrics.gatewayError();
      const body = `egress gateway: ${message}\n`;
      client.end(
        `HTTP/1.1 ${status}\r\n${extra}Content-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    };
    const auth = check(req.headers['proxy-authorization']);
    if (!auth.ok)
      return refuse(
        '407 Proxy Authentication Required',
        'proxy authentication required',
        `Proxy-Authenticate: ${CHALLENGE}\r\n`,
      );
    const target = parseAuthority(req.url ?? '');
    if (!target) return refuse('400 Bad Request', `CONNECT needs host:port, got ${JSON.stringify(req.url ?? '')}`);
    const authority = req.url ?? '';
    const startedAt = performance.now();
    void router
      .route({ session: auth.session, domain: target.host }, (u) =>
        client.destroyed
          ? Promise.resolve({ ok: false as const, reason: 'the client went away', penalize: false, retry: false })
          : connectThrough(u, authority, connectTimeoutMs),
      )
      .then((routed) => {
        if (!routed.ok)
          return refuse(
            '502 Bad Gateway',
            `no fleet proxy could open a tunnel to ${authority}: ${routed.reasons.join('; ')}`,
          );
        router.metrics.request(routed.upstream.name, auth.session, performance.now() - startedAt);
        if (client.destroyed) return routed.value.socket.destroy();
        splice(router, client, head, routed.value, routed.upstream.name, auth.session);
      });
  };
}

/** Serves `GET /metrics` (the router's Prometheus text) at `at`. */
async function startMetrics(router: FleetRouter, at: ListenAddress): Promise<{ server: http.Server; url: string }> {
  const server = http.createServer((req, res) => {
    if (req.url !== '/metrics') return gatewayError(res, 404, 'metrics are at /metrics');
    const text = router.metrics.render();
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }).end(text);
  });
  const bound = await listen(server, at);
  return { server, url: `http://${bound.host.includes(':') ? `[${bound.host}]` : bound.host}:${bound.port}/metrics` };
}
