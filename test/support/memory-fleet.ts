/**
 * The control plane in one process over the in-memory ports: the real requests, check, relay-report
 * and health handlers subscribed to a MemoryBus, the relay-backed provider, and a relay made of the
 * relay's own command and report code (relay/commands.ts, relay/report.ts, relay/probes.ts) over an
 * in-memory backend (relay/testing/fake-backend.ts). Nothing moves until the bus delivers.
 */
import { parseConfig } from '../../shared/config/load.js';
import type { Config } from '../../shared/config/schema.js';
import { instanceName } from '../../shared/domain/names.js';
import { checkProviders } from '../../shared/health.js';
import { createLogger, type Logger } from '../../shared/logger.js';
import type { ProbeOptions, ProbeResult } from '../../shared/probe/probe.js';
import type { Registry } from '../../shared/providers/contract.js';
import { createRegistry } from '../../shared/providers/registry.js';
import { checkAndFollowUp, handleCheckMessage, type CheckDeps } from '../../shared/reconcile/check.js';
import { handleRelayReport } from '../../shared/relay-report.js';
import { fromWire } from '../../shared/wire/command-wire.js';
import { wireCommandSchema, type CommandResult } from '../../shared/wire/protocol.js';
import { generateRelayKeys, parseRelayKeys, signer, type SigningKey } from '../../shared/wire/signature.js';
import { handleRequest, type RequestDeps } from '../../shared/requests.js';
import { TOPICS } from '../../shared/bus/topics.js';
import { ManualClock } from '../../shared/store/clock.js';
import { MemoryPoolRepository } from '../../shared/store/memory/pools.js';
import { MemoryDemandRepository } from '../../shared/store/memory/demand.js';
import { MemoryProviderStatusRepository } from '../../shared/store/memory/providers.js';
import { MemoryProxyRepository } from '../../shared/store/memory/proxies.js';
import { MemoryRelayRepository } from '../../shared/store/memory/relays.js';
import { MemoryReportRepository } from '../../shared/store/memory/reports.js';
import { MemoryState } from '../../shared/store/memory/state.js';
import { applyCommand } from '../../relay/commands.js';
import { CommandLedger } from '../../relay/ledger.js';
import { HealthBook, probeCreated, probeRound } from '../../relay/probes.js';
import { buildReport } from '../../relay/report.js';
import { FakeBackend } from '../../relay/testing/fake-backend.js';
import { MemoryBus } from './memory-bus.js';

export const RELAY = 'mem-relay';

export interface MemoryFleetOptions {
  /** API tokens (config `apiTokens`, 16 characters at least). */
  apiTokens?: string[];
  /** The relay-backed providers (all run by the one relay); default one named `local`. */
  providers?: string[];
  /** More config fields (`gcGraceSeconds`, `backoffBaseSeconds`, `checkBatchSize`, ...). */
  config?: Record<string, unknown>;
  /** Options of every provider (`heartbeatTimeoutSeconds`, `commandResendSeconds`). */
  providerOptions?: Record<string, unknown>;
  /** Every provider's catalogue of named placements. */
  catalogue?: Record<string, Record<string, unknown>>;
}

export interface MemoryFleet {
  config: Config;
  clock: ManualClock;
  bus: MemoryBus;
  logger: Logger;
  proxies: MemoryProxyRepository;
  relays: MemoryRelayRepository;
  reports: MemoryReportRepository;
  providerStatus: MemoryProviderStatusRepository;
  pools: MemoryPoolRepository;
  demand: MemoryDemandRepository;
  registry: Registry;
  /** What the check function runs with (runCheck(fleet.checkDeps, ...) is one check invocation). */
  checkDeps: CheckDeps;
  /** The relay's periodic report (heartbeat and inventory), published now. */
  relayReport(): Promise<void>;
  /** The relay's probe round (every Running instance probed), then its report. */
  probeRound(): Promise<void>;
  /** The relay's backend: its instances, and its `fail` hook. */
  backend: FakeBackend;
  /** The provider's instance name for a proxy. */
  instance(proxy: string): string;
  /** Runs the health function once (what its schedule does). */
  checkHealth(): Promise<void>;
}

/**
 * Builds the fleet. Every delivered message advances the clock by a millisecond, so events and
 * update times keep their order as they would over a real bus.
 */
export async function startMemoryFleet(options: MemoryFleetOptions = {}): Promise<MemoryFleet> {
  const clock = new ManualClock(Date.now());
  const now = () => clock.now();
  const names = options.providers ?? ['local'];
  const config = parseConfig({
    installationId: 'mem',
    echoUrl: 'http://127.0.0.1:1/',
    apiTokens: options.apiTokens ?? [],
    ...options.config,
    providers: names.map((name) => ({
      name,
      type: 'process',
      relay: RELAY,
      options: options.providerOptions ?? {},
      catalogue: options.catalogue ?? {},
    })),
  });
  // Warnings and errors only, kept: a rejected relay report is thrown with the last of them.
  const log: string[] = [];
  const logger = createLogger({ write: (line) => void log.push(line), level: 'WARNING' });
  const state = new MemoryState(clock);
  const bus = new MemoryBus(clock);
  const proxies = new MemoryProxyRepository(clock, state);
  const relays = new MemoryRelayRepository(clock, config.statusRefreshSeconds * 1000, state);
  const providerStatus = new MemoryProviderStatusRepository();
  const pools = new MemoryPoolRepository(state);
  const demand = new MemoryDemandRepository();
  // Signed and sealed as in production: the one relay has its keys, the functions all of them.
  const relayKeys = parseRelayKeys(generateRelayKeys([RELAY]));
  const keys = relayKeys.get(RELAY) ?? [];
  const registry = createRegistry({ config, relays, bus, logger, now, relayKeys });
  const checkDeps: CheckDeps = { config, proxies, registry, logger, bus, now, pools, demand, providerStatus };
  checkDeps.rolloutCounts = (p) => proxies.rolloutCounts(p);
  // As functions/requests and functions/relay-report: they check what they changed in their own invocation.
  const check = (names: string[]) => checkAndFollowUp(checkDeps, { names });
  const requestDeps: RequestDeps = { proxies, bus, logger, maxEvents: config.maxEvents, now, pools, config, check };
  const tick = () => clock.advance(1);
  bus.subscribe(TOPICS.proxyRequests, (m) => (tick(), handleRequest(requestDeps, m)));
  bus.subscribe(TOPICS.proxyChecks, (m) => (tick(), handleCheckMessage(checkDeps, m)));
  bus.subscribe(TOPICS.relayReports, (m) =>
    handleRelayReport({ config, relays, relayKeys, bus, logger, now, check }, m).then((outcome) => {
      if (outcome === 'rejected') throw new Error(`relay report ${m.id} rejected: ${log.at(-1) ?? ''}`);
    }),
  );
  const backends = new Map(names.map((n) => [n, new FakeBackend(n, now)]));
  const relay = await startRelay(bus, backends, config, logger, now, keys);
  bus.subscribe(TOPICS.relayCommands, (m) => (tick(), relay.apply(m.json)));
  const backend = backends.get(names[0] ?? '') as FakeBackend;
  // The relay's first report (it has started) is in before anything else happens.
  await bus.deliver();
  return {
    config,
    clock,
    bus,
    logger,
    proxies,
    relays,
    reports: new MemoryReportRepository(state),
    providerStatus,
    pools,
    demand,
    registry,
    checkDeps,
    relayReport: () => relay.report([]),
    probeRound: relay.round,
    backend,
    instance: (proxy) => instanceName(config.installationId, proxy),
    checkHealth: async () => void (await checkProviders({ registry, providerStatus, logger, now })),
  };
}

/**
 * The relay: applies each command to its backend, probes what it created, and reports (heartbeat,
 * inventory, the command's result) on `relay-reports` at once, as the agent does after a command.
 *
 * @returns the handler of one `relay-commands` message, and the periodic report
 */
async function startRelay(
  bus: MemoryBus,
  backends: Map<string, FakeBackend>,
  config: Config,
  logger: Logger,
  now: () => number,
  keys: readonly SigningKey[],
): Promise<{
  apply: (json: unknown) => Promise<void>;
  report: (results: CommandResult[]) => Promise<void>;
  round: () => Promise<void>;
}> {
  const ledger = await CommandLedger.load(undefined, logger, now);
  const health = new HealthBook();
  const probe = backendProbe(backends);
  const probing = { backends, book: health, echoUrl: config.echoUrl, timeoutMs: 1000, logger, now, probe };
  const startedAt = now();
  let seq = 0;
  const report = async (results: CommandResult[]) => {
    const input = { relay: RELAY, bootId: 'boot-1', seq: ++seq, startedAt, sentAt: now(), backends, health, ledger };
    const body = await buildReport({ ...input, results });
    await bus.publish(TOPICS.relayReports, body, { relay: RELAY }, keys[0] && signer(keys[0], 'report'));
  };
  await report([]);
  const apply = async (json: unknown) => {
    const command = fromWire(wireCommandSchema.parse(json), keys);
    const outcome = await applyCommand(command, { backends, ledger, installationId: config.installationId, logger });
    if (outcome.kind === 'retry') throw outcome.error;
    if (command.kind === 'create' && outcome.result.ok)
      await probeCreated(probing, command.provider, command.spec.name);
    await report([outcome.result]);
  };
  const round = async () => {
    await probeRound(probing);
    await report([]);
  };
  return { apply, report, round };
}

/**
 * Probes an instance of the in-memory backends: it answers, from 127.0.0.1, only at the port of a
 * Running instance and only with that instance's credentials (a wrong password is a 407).
 */
function backendProbe(backends: Map<string, FakeBackend>): (opts: ProbeOptions) => Promise<ProbeResult> {
  return (opts) => {
    const all = [...backends.values()].flatMap((b) => [...b.instances.values()]);
    const found = all.find((i) => i.ip === opts.host && i.port === opts.port && i.state === 'Running');
    if (!found) return Promise.resolve({ ok: false, latencyMs: 0, error: 'connection refused' });
    const { username, password } = found.credentials;
    if (username !== opts.username || password !== opts.password)
      return Promise.resolve({ ok: false, latencyMs: 1, status: 407, error: 'CONNECT answered 407' });
    return Promise.resolve({ ok: true, latencyMs: 12, egressIp: '127.0.0.1', status: 200 });
  };
}
