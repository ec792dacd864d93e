/**
 * `npm run chaos` and its short seeded run in `npm test`: the local stack `npm start` runs, a churn
 * of proxies with traffic through the gateway, and SIGKILLs of the relay, the functions and proxy
 * processes and cuts of the emulators' connections at random moments; then the fleet must settle
 * to exactly what was last asked, with nothing leaked, and the stack must stop everything it started.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startLocalStack } from '../e2e/stack.js';
import { mulberry32 } from '../guarantees/support/prng.js';
import { loadTopology } from '../../infra/local/topology.js';
import { TOPICS } from '../../shared/bus/topics.js';
import { Churn, type ChurnCounts } from './churn.js';
import { drainDeadLetters } from './dead-letters.js';
import { Faults, proxyProcesses, type FaultEvent, type FaultKind } from './faults.js';
import { startTraffic, type Failure } from './traffic.js';
import { hottestDocuments, settleDistribution, type HotDocument, type SettleDistribution } from './settle-report.js';
import { settle } from './verify.js';

/** The push subscription the churn's requests arrive on (infra/topology.yaml). */
const REQUEST_SUBSCRIPTION = loadTopology().subscriptions.find((x) => x.topic === TOPICS.proxyRequests)?.name;

export interface ChaosOptions {
  seed: number;
  /** How many proxy names the churn uses (all applied first). */
  proxies: number;
  /** How long the churn and the faults last after the ramp-up. */
  churnSeconds: number;
  /** How long the fleet may take to settle after the faults stop. */
  settleSeconds: number;
  /** EGRESS_PORT_OFFSET of the stack (the e2e files use their own). */
  portOffset: number;
  log(line: string): void;
}

export interface ChaosReport {
  seed: number;
  proxies: number;
  /** From the first apply to every proxy Ready and running, before churn and faults. */
  rampMs: number;
  churn: ChurnCounts;
  faults: Record<FaultKind, number>;
  requests: number;
  /** Failed requests through the gateway during a proxy process's death (a SIGKILL of it), and the rest. */
  failedAtProxyDeath: number;
  failedOtherwise: Failure[];
  settledMs: number;
  /** Per name, seconds from its last request to the state it settled in. */
  settle: SettleDistribution;
  /** The documents the store's transactions contended on most (retries and failures first). */
  hottestDocuments: HotDocument[];
  /** Messages Pub/Sub gave up on (dead-lettered), by the subscription that gave up. */
  deadLettered: Record<string, number>;
  /** Everything wrong at the end; empty when the run passed. */
  problems: string[];
}

/** Kills and cuts at random moments, 1–4 s apart, until `stop()`. */
function startFaults(faults: Faults, rng: ReturnType<typeof mulberry32>, log: (l: string) => void) {
  const events: FaultEvent[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      await new Promise((resolve) => setTimeout(resolve, rng.int(1000, 4000)));
      if (!running) break;
      const roll = rng.next();
      const event =
        roll < 0.2
          ? faults.killRelay()
          : roll < 0.5
            ? faults.killFunction()
            : roll < 0.8
              ? faults.killProxy()
              : await faults.cutEmulators(rng.int(1000, 4000));
      if (event) {
        events.push(event);
        log(`fault: ${event.kind} ${event.target}`);
      }
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return events;
    },
  };
}

export async function runChaos(opts: ChaosOptions): Promise<ChaosReport> {
  const rng = mulberry32(opts.seed);
  const stack = await startLocalStack({ EGRESS_PORT_OFFSET: String(opts.portOffset), EGRESS_SAMPLES: 'none' });
  const problems: string[] = [];
  try {
    const env = stack.localEnv();
    const gatewayUrl = env['EGRESS_GATEWAY_URL'];
    if (!gatewayUrl) throw new Error(`the stack wrote no EGRESS_GATEWAY_URL:\n${stack.output()}`);
    const echoUrl = `http://127.0.0.1:${8088 + opts.portOffset}/`;
    const emulatorPorts = [env['FIRESTORE_EMULATOR_HOST'], env['PUBSUB_EMULATOR_HOST']].map((h) =>
      Number(h?.split(':').pop()),
    );
    const names = Array.from({ length: opts.proxies }, (_, i) => `ch-${i}`);
    const churn = new Churn(stack.pubsub, rng.fork(), names);
    opts.log(`seed ${opts.seed}: applying ${names.length} proxies`);
    await churn.rampUp();
    // Traffic starts on a Ready fleet: before it, "no Ready fleet proxy" is the truth, not a failure.
    // The ramp is not what is judged: it may take longer than 180 s while proxies keep coming up
    // (on 2 cores each create spawns tinyproxy, openssl and stunnel), not while none does for 60 s.
    const up = await settle(stack.db, stack.home, 'local', churn.wanted, 180_000, 60_000);
    if (up.problems.length > 0) throw new Error(`the fleet never came up:\n  ${up.problems.join('\n  ')}`);
    opts.log(
      `${names.length} proxies Ready in ${(up.ms / 1000).toFixed(1)} s; churn and faults for ${opts.churnSeconds} s`,
    );
    const traffic = startTraffic(gatewayUrl, echoUrl, 4);
    const faults = startFaults(new Faults(stack.home, emulatorPorts, rng.fork()), rng.fork(), (line) => opts.log(line));
    for (const until = Date.now() + opts.churnSeconds * 1000; Date.now() < until;) {
      await churn.step();
      await new Promise((resolve) => setTimeout(resolve, rng.int(20, 200)));
    }
    const events = await faults.stop();
    await churn.quiesce();
    opts.log(`churn over (${JSON.stringify(churn.counts)}); settling`);
    const settled = await settle(stack.db, stack.home, 'local', churn.wanted, opts.settleSeconds * 1000);
    const result = await traffic.stop();
    problems.push(...settled.problems);
    // A request dead-lettered is lost to its client; the others are counted (a sweep redoes a check).
    const letters = await drainDeadLetters(env['PUBSUB_EMULATOR_HOST'] ?? '', env['GOOGLE_CLOUD_PROJECT'] ?? '');
    const deadLettered: Record<string, number> = {};
    for (const l of letters) deadLettered[l.subscription] = (deadLettered[l.subscription] ?? 0) + 1;
    for (const l of letters.filter((x) => x.subscription === REQUEST_SUBSCRIPTION).slice(0, 20))
      problems.push(
        `a request was dead-lettered after ${l.deliveries} deliveries (published ${l.publishedAt}): ${JSON.stringify(l.body)}`,
      );
    // Where to start reading the logs: each unsettled name's last request, by its message id.
    const unsettled = new Set(settled.problems.map((p) => p.split(':')[0] ?? ''));
    for (const [name, m] of churn.lastMessage)
      if (unsettled.has(name))
        opts.log(
          `${name}: last request ${m.action}, message ${m.messageId}, published ${new Date(m.at).toISOString()}`,
        );
    opts.log(
      `settled in ${(settled.ms / 1000).toFixed(1)} s; ${result.total} requests, ${result.failures.length} failed`,
    );
    const deaths = events.filter((e) => e.kind === 'proxy').map((e) => e.at);
    const atDeath = (f: Failure) => deaths.some((t) => f.start <= t + 1000 && t <= f.end);
    const failedOtherwise = result.failures.filter((f) => !atDeath(f));
    for (const f of failedOtherwise.slice(0, 10))
      problems.push(`a request through the gateway failed at ${new Date(f.start).toISOString()}: ${f.error}`);
    const count = (kind: FaultKind) => events.filter((e) => e.kind === kind).length;
    return {
      seed: opts.seed,
      proxies: opts.proxies,
      rampMs: up.ms,
      churn: churn.counts,
      faults: {
        relay: count('relay'),
        function: count('function'),
        proxy: count('proxy'),
        emulators: count('emulators'),
      },
      requests: result.total,
      failedAtProxyDeath: result.failures.length - failedOtherwise.length,
      failedOtherwise,
      settledMs: settled.ms,
      settle: settleDistribution(new Map([...churn.lastMessage].map(([name, m]) => [name, m.at])), settled.settledAt),
      hottestDocuments: hottestDocuments(stack.home),
      deadLettered,
      problems,
    };
  } finally {
    const code = await stack.interrupt();
    // The stack's own output (its fronts, schedules and the gateway log there) beside the others'.
    writeFileSync(join(stack.home, 'logs', 'stack.log'), stack.output());
    opts.log(`logs: ${join(stack.home, 'logs')}`);
    const left = proxyProcesses(stack.home);
    if (code !== 0) problems.push(`the stack exited with ${code}`);
    if (left.length > 0) problems.push(`${left.length} proxy processes still run after the stack stopped`);
  }
}
