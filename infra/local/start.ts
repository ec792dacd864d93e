/** `npm start`: runs the whole product locally, applies the sample fleet, prints how to use it; Ctrl-C stops all. */
import { appendFileSync, existsSync, readFileSync, unwatchFile, watchFile } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Firestore } from '@google-cloud/firestore';
import { TOPICS } from '../../shared/bus/topics.js';
import { loadConfig } from '../../shared/config/load.js';
import { parseProxyDocuments } from '../../shared/domain/documents.js';
import type { Logger } from '../../shared/logger.js';
import { leastToken } from '../../shared/api/scopes.js';
import { createFleetApi, startGateway, type Gateway } from '../../gateway/index.js';
import { ApiError } from '../../shared/api/api-error.js';
import { GATEWAY_PORT, startStack, stackHome, type Stack } from './stack.js';

/** Human-readable launcher output (this is a terminal program, not a function). */
function consoleLogger(): Logger {
  const line = (level: string, message: string, fields?: Record<string, unknown>) => {
    const shown = Object.fromEntries(
      Object.entries(fields ?? {}).map(([k, v]) => [k, v instanceof Error ? v.message : v]),
    );
    const extra = Object.keys(shown).length > 0 ? ` ${JSON.stringify(shown)}` : '';
    console.log(`[egress] ${level === 'INFO' ? '' : `${level} `}${message}${extra}`);
  };
  const logger: Logger = {
    debug: () => {},
    info: (m, f) => line('INFO', m, f),
    warn: (m, f) => line('WARNING', m, f),
    error: (m, f) => line('ERROR', m, f),
    child: () => logger,
  };
  return logger;
}

function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'firebase.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('cannot find the repository root (firebase.json)');
    dir = up;
  }
  return dir;
}

async function applySamples(stack: Stack, file: string, logger: Logger): Promise<string[]> {
  const requests = parseProxyDocuments(readFileSync(file, 'utf8'));
  for (const request of requests) {
    await stack.pubsub.topic(TOPICS.proxyRequests).publishMessage({ json: request, attributes: { action: 'apply' } });
  }
  logger.info(`applied ${requests.length} sample proxies from ${file}`);
  return requests.map((r) => r.metadata.name);
}

async function waitForFleet(db: Firestore, names: string[], timeoutMs: number, logger: Logger): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    const docs = await Promise.all(names.map((n) => db.collection('proxies').doc(n).get()));
    const phases = docs.map((d, i) => `${names[i]}=${String(d.get('status.phase') ?? 'not yet recorded')}`).join(' ');
    if (phases !== last) logger.info(`fleet: ${phases}`);
    last = phases;
    if (docs.every((d) => d.get('status.phase') === 'Ready')) return;
    await sleep(1000);
  }
  logger.warn(`the sample fleet is not Ready after ${timeoutMs / 1000}s; see the logs`);
}

/**
 * Restarts the functions when the config file's content changes to a valid config, one restart at
 * a time. A write is seen as two changes when a poll falls between its truncate and its write: the
 * empty file is not a config, and overlapping restarts would kill the functions just started.
 */
function watchConfig(file: string, stack: Stack, env: NodeJS.ProcessEnv, logger: Logger): void {
  let applied = readFileSync(file, 'utf8');
  let restarting: Promise<void> = Promise.resolve();
  watchFile(file, { interval: 1000 }, () => {
    restarting = restarting.then(async () => {
      const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
      if (text === applied) return;
      try {
        loadConfig(env);
      } catch (err) {
        logger.warn(`${file} changed but is not a valid config; the functions keep the last one`, { error: err });
        return;
      }
      applied = text;
      logger.info(`${file} changed; restarting the functions`);
      await stack.restartFunctions().catch((err: unknown) => logger.error('restart failed', { error: err }));
    });
  });
}

/**
 * One gateway in front of the local fleet (docs/gateway.md) on 127.0.0.1:8899 (plus the port
 * offset), or a free port when that one is taken; its URL goes to local.env as EGRESS_GATEWAY_URL.
 */
async function startLocalGateway(stack: Stack, home: string, portOffset: number, logger: Logger): Promise<Gateway> {
  // Discovery and reports are all it calls: it gets the least token that allows them.
  const fleet = createFleetApi({ apiUrl: stack.apiUrl, token: leastToken(stack.config.apiTokens, 'discover') });
  // The functions were just started: on a loaded machine the API's first answer can take longer
  // than the gateway's 5 s discovery timeout, so its first list is asked for again for a while.
  const start = async (port: number): Promise<Gateway> => {
    for (const deadline = Date.now() + 60_000; ;) {
      try {
        return await startGateway({ fleet, listen: { host: '127.0.0.1', port }, logger });
      } catch (err) {
        if (!(err instanceof ApiError) || Date.now() > deadline) throw err;
        logger.info('the gateway is waiting for the API to answer', { error: err });
        await sleep(1000);
      }
    }
  };
  let gateway: Gateway;
  try {
    gateway = await start(GATEWAY_PORT + portOffset);
  } catch (err) {
    if (!(err instanceof Error && 'code' in err && err.code === 'EADDRINUSE')) throw err;
    logger.warn(`port ${GATEWAY_PORT + portOffset} is in use; the gateway listens on a free port instead`);
    gateway = await start(0);
  }
  appendFileSync(join(home, 'local.env'), `EGRESS_GATEWAY_URL=${gateway.url}\n`);
  return gateway;
}

async function main(): Promise<void> {
  const root = repoRoot();
  const env = process.env;
  const home = stackHome(root, env);
  const logger = consoleLogger();
  const portOffset = Number(env['EGRESS_PORT_OFFSET'] ?? 0);
  if (!Number.isInteger(portOffset) || portOffset < 0)
    throw new Error('EGRESS_PORT_OFFSET must be a non-negative integer');

  const stack = await startStack({ root, home, portOffset, env, logger });
  /** Set once the fleet is up; the shutdown closes it first. */
  const running: { gateway?: Gateway } = {};
  let stopping = false;
  const shutdown = async () => {
    if (stopping) return;
    stopping = true;
    logger.info('stopping everything this stack started…');
    if (env['EGRESS_CONFIG']) unwatchFile(env['EGRESS_CONFIG']);
    await running.gateway?.close();
    await stack.stop();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown());
  process.on('SIGTERM', () => void shutdown());

  const configFile = env['EGRESS_CONFIG'];
  if (configFile) watchConfig(configFile, stack, env, logger);

  const db = new Firestore({ projectId: stack.config.project });
  const samples = env['EGRESS_SAMPLES'] ?? join(root, 'docs', 'samples', 'local-fleet.yaml');
  const names = samples === 'none' ? [] : await applySamples(stack, samples, logger);
  await waitForFleet(db, names, 90_000, logger);
  // The stack is useful without its gateway: a gateway that cannot start is a warning, not a stop.
  const gateway = await startLocalGateway(stack, home, portOffset, logger).catch((err: unknown) => {
    logger.warn('the gateway did not start; the stack runs without it', { error: err });
    return undefined;
  });
  running.gateway = gateway;
  const first = names[0] ? await db.collection('proxies').doc(names[0]).get() : undefined;
  const creds = names[0] ? await db.collection('credentials').doc(names[0]).get() : undefined;
  const address = first?.get('status.address') as unknown;
  console.log('');
  console.log(`Local stack is running (project ${stack.config.project}). Ctrl-C stops everything.`);
  console.log(
    `  dashboard and API: ${stack.apiUrl}/   admin token: ${leastToken(stack.config.apiTokens, 'admin') ?? '(none)'}`,
  );
  console.log(`  CLI: npx egress get proxies   (it reads ${join(home, 'local.env')})`);
  console.log(`  state and clients: ${join(home, 'local.env')}   logs: ${join(home, 'logs')}`);
  if (stack.env['EGRESS_TRACE_FILE'])
    console.log(`  traces: npm run traces   (spans in ${stack.env['EGRESS_TRACE_FILE']})`);
  if (gateway) console.log(`  gateway: ${gateway.url}   (one proxy URL for the whole fleet: docs/gateway.md)`);
  if (typeof address === 'string' && creds?.exists) {
    const user = encodeURIComponent(String(creds.get('username')));
    const pass = encodeURIComponent(String(creds.get('password')));
    console.log(`  try a proxy:  curl -x http://${user}:${pass}@${address} ${stack.config.echoUrl}`);
  }
  console.log('');
}

main().catch((err: unknown) => {
  console.error(`[egress] ERROR ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
