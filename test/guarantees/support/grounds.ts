/**
 * What a guarantee world runs on, per provider type: the backend side of the functions' provider
 * and the ground truth the suites count instances in.
 *
 * - `process`: a real relay agent with its process backend (real proxy processes, counted in /proc);
 * - `kvm`: a real relay agent with its kvm backend on libvirt's test driver (domains counted through
 *   libvirt; the test driver runs no guest, so no probe succeeds: see {@link Ground.servingPhase});
 * - `gcp`: the wire-level fake Compute API (VMs counted in the fake; each runs a real proxy);
 * - `kubernetes`: the wire-level fake Kubernetes API (Pods counted in the fake; each runs a real proxy).
 */
import type { Firestore } from '@google-cloud/firestore';
import { appendFileSync, mkdirSync } from 'node:fs';
import type { Bus } from '../../../shared/bus/pubsub.js';
import { parseConfig } from '../../../shared/config/load.js';
import { localEgressPolicy } from '../../../shared/config/egress-policy.js';
import type { Config } from '../../../shared/config/schema.js';
import type { Phase } from '../../../shared/domain/status.js';
import { NotFoundError } from '../../../shared/errors.js';
import { createLogger, type Logger } from '../../../shared/logger.js';
import { startEchoServer } from '../../../shared/probe/echo-server.js';
import { createRegistry } from '../../../shared/providers/registry.js';
import type { RelayKeyring } from '../../../shared/wire/signature.js';
import { createFirestore } from '../../../shared/store/firestore/client.js';
import { FirestoreRelayRepository } from '../../../shared/store/firestore/relays.js';
import { startFakeGce } from '../../fakes/gce/index.js';
import { startFakeKube } from '../../fakes/kube/index.js';
import { emulatorEnv } from '../../support/emulator-env.js';
import { startKvmHost } from '../../support/kvm-host.js';
import { loopbackOnlyProbe } from '../../support/loopback-probe.js';
import { startRelayHarness, type RelayHarness, type RelayHarnessOptions } from '../../support/relay-harness.js';
import { proxyProcesses } from './processes.js';

export const PROVIDER_KINDS = ['process', 'kvm', 'gcp', 'kubernetes'] as const;
export type ProviderKind = (typeof PROVIDER_KINDS)[number];

/**
 * The providers a suite runs against: `GUARANTEE_PROVIDERS` (comma-separated, or `all`) when set,
 * else the suite's `defaults` (every provider, unless the suite says why not).
 */
export function providersUnderTest(defaults: readonly ProviderKind[] = PROVIDER_KINDS): ProviderKind[] {
  const given = process.env['GUARANTEE_PROVIDERS'];
  if (!given) return [...defaults];
  if (given === 'all') return [...PROVIDER_KINDS];
  const kinds = given.split(',').map((k) => k.trim());
  for (const k of kinds)
    if (!(PROVIDER_KINDS as readonly string[]).includes(k))
      throw new Error(`GUARANTEE_PROVIDERS: "${k}" is not one of ${PROVIDER_KINDS.join(', ')}`);
  return kinds as ProviderKind[];
}

/** What a world needs to know about one instance, whoever keeps it. */
export interface Item {
  state: string;
  specHash: string;
  createdAt: number;
}

export interface GroundOptions {
  kind: ProviderKind;
  /** The provider's name in the config. */
  provider: string;
  /** Relay id, log file and project prefix. */
  name: string;
  /** Proxy ports of the process backend. */
  ports: [number, number];
  /** Config fields for the functions' side (the `providers` list is the ground's). */
  config: Record<string, unknown>;
  /** Options of a relay-backed provider (heartbeatTimeoutSeconds, commandResendSeconds). */
  relayOptions: Record<string, unknown>;
  harness: RelayHarnessOptions;
}

export interface Ground {
  config: Config;
  db: Firestore;
  logger: Logger;
  relays: FirestoreRelayRepository;
  /** The bus relay commands go out on (cloud providers publish nothing). */
  bus: Bus;
  relayKeys?: RelayKeyring;
  /** The relay, for relay-backed providers. */
  harness?: RelayHarness;
  /** The placement of spec variant 1 (also the provider's catalogue entry `alt`). */
  placement: Record<string, unknown>;
  /**
   * The phase a live proxy settles in: `Ready`, or `Unhealthy` on libvirt's test driver (its
   * domains run no guest, so the relay's probe reaches no proxy; the suites then hold
   * `unhealthyAfter` out of reach so that this is not a replacement).
   */
  servingPhase: Phase;
  /** The instance as the backend keeps it (the relay's inventory, the fake's VM or Pod). */
  item(instance: string): Promise<Item | undefined>;
  /** Names of the instances the backend keeps. */
  inventory(): Promise<string[]>;
  /** Instances per name where they really are: processes, libvirt domains, the fake's VMs or Pods. */
  counts(): Promise<Map<string, number>>;
  close(): Promise<void>;
}

const tally = (names: string[]) => {
  const counts = new Map<string, number>();
  for (const n of names) counts.set(n, (counts.get(n) ?? 0) + 1);
  return counts;
};

export function startGround(o: GroundOptions): Promise<Ground> {
  if (o.kind === 'process' || o.kind === 'kvm') return relayGround(o);
  return cloudGround(o);
}

async function relayGround(o: GroundOptions): Promise<Ground> {
  const kvm = o.kind === 'kvm' ? await startKvmHost() : undefined;
  const placement = kvm ? { host: 'h1' } : { bindAddress: '127.0.0.1' };
  const backend = (stateDir: string) =>
    kvm
      ? {
          provider: o.provider,
          type: 'kvm',
          stateDir,
          hosts: { h1: kvm.hostConfig() },
          callTimeoutSeconds: 30,
          startupGraceSeconds: 0,
        }
      : { provider: o.provider, type: 'process', stateDir, bindAddresses: ['127.0.0.1'], portRange: o.ports };
  const providers = [
    {
      name: o.provider,
      type: o.kind,
      relay: o.name,
      catalogue: { alt: placement },
      rolloutBudget: 50,
      options: { heartbeatTimeoutSeconds: 30, ...o.relayOptions },
    },
  ];
  const h = await startRelayHarness(
    o.name,
    o.ports,
    { ...o.config, ...(kvm && { unhealthyAfter: 1_000_000 }), providers },
    { ...o.harness, backends: (stateDir) => [backend(stateDir)], ...(kvm && { probe: loopbackOnlyProbe }) },
  ).catch(async (err: unknown) => {
    await kvm?.close();
    throw err;
  });
  return {
    config: h.config,
    db: h.db,
    logger: h.logger,
    relays: h.relays,
    bus: h.bus,
    relayKeys: h.relayKeys,
    harness: h,
    placement,
    servingPhase: kvm ? 'Unhealthy' : 'Ready',
    item: (instance) => h.relays.instance(o.name, instance),
    inventory: async () => (await h.relays.instances(o.name)).map((i) => i.name),
    counts: async () =>
      kvm
        ? tally((await kvm.domains.listAllDomains()).map((d) => d.name).filter((n) => n.startsWith('ep-')))
        : proxyProcesses(h.stateDir),
    async close() {
      await h.close();
      await kvm?.close();
    },
  };
}

/** The fake's side of a cloud ground: provider entry, placement of variant 1, and its instances. */
interface CloudFake {
  entry: Record<string, unknown>;
  placement: Record<string, unknown>;
  /** Live instance names (one entry per VM or Pod, however far it is in its life). */
  names(): string[];
  close(): Promise<void>;
}

async function cloudFake(kind: 'gcp' | 'kubernetes'): Promise<CloudFake> {
  if (kind === 'gcp') {
    const fake = await startFakeGce();
    return {
      entry: { project: 'guarantee-project', zone: 'us-central1-a', operationWaitSeconds: 0.3, ...fake.endpoint },
      placement: { machineType: 'e2-small' },
      names: () => fake.instances().map((vm) => vm.name),
      close: () => fake.close(),
    };
  }
  const fake = await startFakeKube({ namespaces: ['default', 'alt'] });
  return {
    entry: { ...fake.access(), namespaces: ['alt'] },
    placement: { namespace: 'alt' },
    names: () => fake.pods().map((p) => p.metadata.name),
    close: () => fake.close(),
  };
}

async function cloudGround(o: GroundOptions): Promise<Ground> {
  const kind = o.kind as 'gcp' | 'kubernetes';
  const emu = emulatorEnv(o.name);
  mkdirSync('test-results', { recursive: true });
  const logger = createLogger({
    write: (l) => {
      appendFileSync(`test-results/${o.name}.log`, `${l}\n`);
      o.harness.onLog?.(l);
    },
    level: 'DEBUG',
  });
  const fake = await cloudFake(kind);
  const echo = await startEchoServer();
  const config = parseConfig({
    installationId: 'it',
    echoUrl: echo.url,
    // The functions probe these proxies themselves: under load a 2 s probe fails now and then.
    probeTimeoutSeconds: 5,
    ...o.config,
    providers: [
      {
        name: o.provider,
        type: kind,
        catalogue: { alt: fake.placement },
        options: fake.entry,
        // The echo endpoint is on loopback, on a port of its own: the fakes' real tinyproxy (its
        // ConnectPort lines, which the probe's CONNECT over the TLS listener meets) admits it only
        // with a policy that allows it.
        egress: localEgressPolicy([]),
      },
    ],
  });
  const db = createFirestore(emu.projectId);
  const relays = new FirestoreRelayRepository(db, logger);
  // Cloud providers publish no commands: a bus that takes nothing is all they get.
  const bus: Bus = { publish: () => Promise.reject(new Error(`the ${kind} provider publishes nothing`)) };
  const raw = createRegistry({ config, relays, bus, logger }).get(o.provider);
  if (!raw) throw new Error(`the registry built no ${kind} provider`);
  return {
    config,
    db,
    logger,
    relays,
    bus,
    placement: fake.placement,
    servingPhase: 'Ready',
    async item(instance) {
      try {
        const found = await raw.get(instance);
        return { state: found.state, specHash: found.specHash, createdAt: found.createdAt };
      } catch (err) {
        if (err instanceof NotFoundError) return undefined;
        // Not observed this time (an API call that failed): a problem to look at again, not a verdict.
        return { state: `unobserved (${String(err)})`, specHash: '', createdAt: 0 };
      }
    },
    inventory: async () => (await raw.list()).map((i) => i.name),
    counts: () => Promise.resolve(tally(fake.names())),
    async close() {
      await fake.close();
      await echo.close();
      await db.terminate();
    },
  };
}
