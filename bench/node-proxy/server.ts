/**
 * Entry of one Node proxy process: reads its config from stdin, serves an authenticating HTTP proxy.
 * What the process backend ran before tinyproxy; the bench measures it as the reference.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import http from 'node:http';
import type { Socket } from 'node:net';
import { createProxy } from 'proxy';
import { createLogger } from '../../shared/logger.js';
import { basicAuthMatches } from './basic-auth.js';
import { destinationOf, proxyProcessConfigSchema, sourceFor, type ProxyProcessConfig } from './config.js';

const logger = createLogger({ write: (line) => process.stderr.write(`${line}\n`) });

function readStdin(): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    process.stdin.on('data', (c: Buffer) => chunks.push(c));
    process.stdin.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    process.stdin.on('error', reject);
  });
}

/** Reports a startup failure on stdout (for the backend) and stderr (for the log), then exits 1. */
function die(error: string, code?: string): never {
  const line = JSON.stringify({ ready: false, error, ...(code ? { code } : {}) });
  process.stdout.write(`${line}\n`);
  process.stderr.write(`${line}\n`);
  process.exit(1);
}

function parseConfig(text: string): ProxyProcessConfig {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    die('config on stdin is not JSON');
  }
  const parsed = proxyProcessConfigSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    die(`config.${(issue?.path ?? []).join('.')}: ${issue?.message ?? 'invalid'}`);
  }
  const marker = process.argv.find((a) => a.startsWith('--egress-proxy='));
  if (marker && marker !== `--egress-proxy=${parsed.data.name}`)
    die('config.name does not match the --egress-proxy marker');
  return parsed.data;
}

/**
 * Makes the proxy open its upstream sockets from `localAddress` where that can work (`sourceFor`).
 * The library reads `server.localAddress` as it opens each upstream socket, within the async
 * context of the request's handler: each handler runs with its request's destination at hand.
 */
function bindUpstream(server: ReturnType<typeof createProxy>, localAddress: string): void {
  const destination = new AsyncLocalStorage<string | undefined>();
  Object.defineProperty(server, 'localAddress', {
    get: () => sourceFor(destination.getStore(), localAddress),
    configurable: true,
  });
  for (const event of ['request', 'connect'] as const) {
    const handlers = server.listeners(event) as ((req: http.IncomingMessage, ...rest: unknown[]) => unknown)[];
    server.removeAllListeners(event);
    for (const handler of handlers) {
      server.on(event, (req: http.IncomingMessage, ...rest: unknown[]) =>
        destination.run(destinationOf(req.method, req.url), () => handler.call(server, req, ...rest)),
      );
    }
  }
}

async function main(): Promise<void> {
  // After the ready line the backend closes our stdout; later writes must not crash us.
  process.stdout.on('error', () => undefined);
  const config = parseConfig(await readStdin());
  const log = logger.child({ instance: config.name });
  const expected = Buffer.from(`${config.username}:${config.password}`);
  const server = createProxy(http.createServer());
  server.authenticate = (req) => basicAuthMatches(req.headers['proxy-authorization'], expected);
  if (config.localAddress) bindUpstream(server, config.localAddress);

  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('error', (err: NodeJS.ErrnoException) =>
    die(`cannot listen on ${config.host}:${config.port}: ${err.message}`, err.code),
  );
  server.listen(config.port, config.host, () => {
    const address = server.address();
    const port = typeof address === 'object' && address !== null ? address.port : config.port;
    process.stdout.write(`${JSON.stringify({ ready: true, port })}\n`);
    log.info('proxy listening', { host: config.host, port, localAddress: config.localAddress });
  });

  const shutdown = (signal: string) => {
    log.info('proxy stopping', { signal });
    server.close(() => process.exit(0));
    // CONNECT tunnels are detached from the HTTP machinery: end them ourselves.
    for (const socket of sockets) socket.destroy();
    setTimeout(() => process.exit(0), 1000).unref();
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

// The proxy library rejects on some malformed CONNECT requests; one bad client must not stop us.
process.on('unhandledRejection', (reason) => logger.warn('unhandled rejection', { error: String(reason) }));
main().catch((err: unknown) => die(err instanceof Error ? err.message : String(err)));
