/** `egress gateway`: a thin layer over gateway/ — starts one, prints its URL, runs until Ctrl-C, prints the usage summary. */
import { createFleetApi, startGateway, type GatewayCredentials } from '../gateway/index.js';
import { createApiAuth } from '../shared/api/cloud-run-auth.js';
import type { Logger } from '../shared/logger.js';
import type { Command } from './command.js';
import type { Io } from './commands.js';
import type { CliConfig } from './config.js';

/** Human-readable lines on stderr (stdout carries only the URL, for `$(egress gateway)`-style use). */
function stderrLogger(io: Io): Logger {
  const line = (level: string) => (message: string, fields?: Record<string, unknown>) => {
    const shown = Object.entries(fields ?? {})
      .map(([k, v]) => `${k}=${v instanceof Error ? v.message : typeof v === 'string' ? v : JSON.stringify(v)}`)
      .join(' ');
    io.stderr.write(`[gateway] ${level}${message}${shown ? ` (${shown})` : ''}\n`);
  };
  const logger: Logger = {
    debug: () => {},
    info: line(''),
    warn: line('warning: '),
    error: line('error: '),
    child: () => logger,
  };
  return logger;
}

/** The gateway's own credentials: EGRESS_GATEWAY_USER and EGRESS_GATEWAY_PASSWORD, both or neither. */
export function gatewayCredentials(env: NodeJS.ProcessEnv): GatewayCredentials | undefined {
  const username = env['EGRESS_GATEWAY_USER'] || undefined;
  const password = env['EGRESS_GATEWAY_PASSWORD'] || undefined;
  if (!username && !password) return undefined;
  if (!username || !password)
    throw new Error('set both EGRESS_GATEWAY_USER and EGRESS_GATEWAY_PASSWORD, or neither (random credentials)');
  if (username.includes(':')) throw new Error('EGRESS_GATEWAY_USER must not contain ":"');
  return { username, password };
}

/**
 * Runs the gateway until `io.signal` aborts.
 *
 * @throws Error when the API cannot be reached at start or the address is taken
 */
export async function runGateway(cmd: Extract<Command, { verb: 'gateway' }>, io: Io, config: CliConfig): Promise<void> {
  const logger = stderrLogger(io);
  const credentials = gatewayCredentials(io.env);
  const gateway = await startGateway({
    // The least token that serves: discovery and reports need only the `discover` scope.
    fleet: createFleetApi({
      apiUrl: config.apiUrl,
      token: config.discoverToken ?? config.token,
      auth: createApiAuth(config.apiAuth),
    }),
    filters: { pool: cmd.pool, provider: cmd.provider, labels: cmd.labels },
    listen: cmd.listen,
    banOn: cmd.banOn,
    socksNoAuthFrom: cmd.socksNoAuthFrom,
    wakeTimeoutMs: cmd.wakeTimeoutMs,
    logger,
    ...(credentials && { credentials }),
    ...(cmd.metrics && { metrics: cmd.metrics }),
  });
  io.stdout.write(`${gateway.url}\n`);
  const ready = gateway.router.selector.upstreams().length;
  logger.info(`listening; ${ready} Ready fleet ${ready === 1 ? 'proxy' : 'proxies'} now; Ctrl-C stops it`);
  if (gateway.metricsUrl) logger.info(`metrics at ${gateway.metricsUrl}`);
  await new Promise<void>((resolve) => {
    if (io.signal?.aborted) return resolve();
    io.signal?.addEventListener('abort', () => resolve(), { once: true });
  });
  await gateway.close();
  const summary = await gateway.metrics.summary();
  io.stderr.write(
    `[gateway] stopped; usage per fleet proxy:\n${summary.map((l) => `  ${l}\n`).join('') || '  (no traffic)\n'}`,
  );
}
