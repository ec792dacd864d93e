/**
 * The relay's own cost of a ramp, without the rest of the stack: the real relay agent (command
 * intake, probe round, reports every 2 s and after each create) over a `process` backend that
 * starts real tinyproxy and stunnel processes, fed N signed creates at once as the functions send
 * them; the bus carries the commands in process and drops the reports after serialising and
 * signing them. Prints the relay's CPU per create, the time to N Running, and the CPU a second of
 * the settled fleet costs. Run it under `node --cpu-prof` to see where the time goes:
 *
 *   esbuild bench/relay-ramp.ts --bundle --platform=node --format=esm --packages=external \
 *     --outfile=node_modules/.cache/relay-ramp.js && node --cpu-prof node_modules/.cache/relay-ramp.js 150
 */
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createBus } from '../shared/bus/pubsub.js';
import { localEgressPolicy } from '../shared/config/egress-policy.js';
import { createLogger } from '../shared/logger.js';
import { startEchoServer } from '../shared/probe/echo-server.js';
import { toWire } from '../shared/wire/command-wire.js';
import type { RelayCommand } from '../shared/wire/protocol.js';
import { generateRelayKeys, parseRelayKeys, signer } from '../shared/wire/signature.js';
import { createRelayAgent } from '../relay/agent.js';
import { createBackends } from '../relay/backends/create-backends.js';
import { stopAllInstances } from '../relay/backends/process/index.js';
import type { CommandMessage, CommandSubscription } from '../relay/command-subscription.js';
import { parseRelayConfig } from '../relay/config.js';

// The echo endpoint runs in a process of its own, as in the stack: its work is not the relay's.
if (process.argv[2] === 'echo') {
  const server = await startEchoServer();
  process.send?.(server.url);
  process.on('disconnect', () => void server.close().then(() => process.exit(0)));
  await new Promise(() => undefined);
}
const proxies = Number(process.argv[2] ?? 150);
const firstPort = Number(process.argv[3] ?? 26400);
const steadySeconds = Number(process.argv[4] ?? 20);
const RELAY = 'ramp';
const PROVIDER = 'local';

const home = mkdtempSync(join(tmpdir(), 'egress-relay-ramp-'));
const echoProcess = fork(process.argv[1] ?? '', ['echo'], { execArgv: [] });
const echoUrl = await new Promise<string>((resolve) => echoProcess.once('message', (m) => resolve(m as string)));
const keys = parseRelayKeys(generateRelayKeys([RELAY])).get(RELAY) ?? [];
const [key] = keys;
if (!key) throw new Error('no relay key');
const signCommand = signer(key, 'command');
const config = parseRelayConfig({
  relay: RELAY,
  project: 'demo-egress',
  subscription: 'relay-commands-ramp',
  reportsTopic: 'relay-reports',
  echoUrl,
  probeIntervalSeconds: 2,
  reportIntervalSeconds: 2,
  probeTimeoutSeconds: 3,
  installationId: 'local',
  stateDir: join(home, 'relay'),
  backends: [
    {
      provider: PROVIDER,
      type: 'process',
      stateDir: join(home, 'state'),
      bindAddresses: ['127.0.0.1'],
      portRange: [firstPort, firstPort + proxies * 2 + 10],
      egressAddresses: '127.9.0.0/16',
      egress: localEgressPolicy([]),
    },
  ],
});
// At the relay's own level (INFO), its lines formatted and dropped.
const logger = createLogger({ write: () => undefined });
const backends = createBackends(config, { logger });

/** The commands not yet handed to the relay, and a subscription handing out at most `maxInFlight`. */
const queue: CommandMessage[] = [];
const applied = new Set<string>();
let reports = 0;
let reportBytes = 0;
let onMessage: ((m: CommandMessage) => void) | undefined;
let inFlight = 0;
let limit = 1;
const pump = () => {
  while (onMessage && inFlight < limit && queue.length > 0) {
    const next = queue.shift();
    if (!next) break;
    inFlight++;
    onMessage(next);
  }
};
const subscription: CommandSubscription = {
  on(event: string, listener: unknown) {
    if (event === 'message') onMessage = listener as (m: CommandMessage) => void;
    setImmediate(pump);
    return subscription;
  },
  removeListener() {
    onMessage = undefined;
    return subscription;
  },
  close: () => Promise.resolve(),
};
const bus = createBus((topic, data) => {
  if (topic === 'relay-reports') {
    reports++;
    reportBytes += data.length;
  }
  return Promise.resolve(randomUUID());
});
const agent = createRelayAgent({
  config,
  bus,
  subscribe: (_name, maxInFlight) => {
    limit = maxInFlight;
    return subscription;
  },
  backends,
  logger,
  keys,
});

function createMessage(i: number): CommandMessage {
  const name = `ramp-${i}`;
  const credentials = { username: 'u', password: `p-${i}-secret` };
  const spec = { name, proxy: name, installationId: 'local', specHash: 'ramp', port: 0, placement: {}, credentials };
  const issuedAt = Date.now();
  const command: RelayCommand = {
    kind: 'create',
    commandId: randomUUID(),
    relay: RELAY,
    provider: PROVIDER,
    issuedAt,
    spec,
  };
  const text = JSON.stringify(toWire(command, keys[0]));
  const settle = () => {
    inFlight--;
    setImmediate(pump);
  };
  return {
    id: command.commandId,
    publishTime: new Date(),
    attributes: { relay: RELAY, kind: 'create', ...signCommand(text) },
    data: Buffer.from(text),
    ack: () => {
      applied.add(name);
      settle();
    },
    nack: () => {
      queue.push(createMessage(i));
      settle();
    },
  };
}

const backend = backends.get(PROVIDER);
if (!backend) throw new Error('no backend');
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
await agent.start();
const start = Date.now();
const cpu0 = cpu();
for (let i = 0; i < proxies; i++) queue.push(createMessage(i));
pump();
// Each create is acknowledged once applied: watching the acks adds no listing of our own.
while (applied.size < proxies) await new Promise((resolve) => setTimeout(resolve, 100));
const rampMs = Date.now() - start;
const rampCpu = cpu() - cpu0;
const cpu1 = cpu();
await new Promise((resolve) => setTimeout(resolve, steadySeconds * 1000));
const steadyCpu = cpu() - cpu1;
// One listing alone (what each probe round and report makes), averaged over ten.
const cpu2 = cpu();
for (let i = 0; i < 9; i++) await backend.list();
const running = (await backend.list()).filter((x) => x.state === 'Running').length;
const listingCpu = (cpu() - cpu2) / 10;
console.log(
  JSON.stringify({
    proxies,
    running,
    applied: applied.size,
    rampSeconds: rampMs / 1000,
    relayCpuMsPerCreate: Math.round(rampCpu / proxies),
    relayCpuShareInRamp: Number((rampCpu / rampMs).toFixed(2)),
    settledCpuShare: Number((steadyCpu / (steadySeconds * 1000)).toFixed(3)),
    listingCpuMs: Number(listingCpu.toFixed(1)),
    reports,
    reportKiB: Math.round(reportBytes / 1024),
  }),
);
await agent.stop();
for (const b of backends.values()) await b.close();
await stopAllInstances(join(home, 'state'));
echoProcess.disconnect();
rmSync(home, { recursive: true, force: true });
