/**
 * What a guarantee world runs on: the backend side of the functions' provider and the ground truth
 * the suites count instances in. Two shapes, which each provider's kit (`test/kits/<type>.ts`,
 * its `guarantees.start`) fills in: a real relay agent with the kit's backend
 * ({@link relayGround}: `process`, `kvm`), or a wire-level fake cloud ({@link cloudGround}: `gcp`,
 * `kubernetes`).
 */
import type { Firestore } from '@google-cloud/firestore';
import { appendFileSync, mkdirSync } from 'node:fs';
import type { Bus } from '../../../shared/bus/pubsub.js';
import { parseConfig } from '../../../shared/config/load.js';
import { localEgressPolicy } from '../../../shared/config/egress-policy.js';
import type { Config, ProviderType } from '../../../shared/config/schema.js';
import { NotFoundError } from '../../../shared/errors.js';
import { createLogger, type Logger } from '../../../shared/logger.js';
import { startEchoServer } from '../../../shared/probe/echo-server.js';
import { createRegistry } from '../../../shared/providers/registry.js';
import type { RelayKeyring } from '../../../shared/wire/signature.js';
import { createFirestore } from '../../../shared/store/firestore/client.js';
import { FirestoreRelayRepository } from '../../../shared/store/firestore/relays.js';
import { emulatorEnv } from '../../support/emulator-env.js';
import { startRelayHarness, type RelayHarness, type RelayHarnessOptions } from '../../support/relay-harness.js';

/** What a world needs to know about one instance, whoever keeps it. */
export interface Item {
  state: string;
  specHash: string;
  createdAt: number;
}

export interface GroundOptions {
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
  /** The instance as the backend keeps it (the relay's inventory, the fake's VM or Pod). */
  item(instance: string): Promise<Item | undefined>;
  /** Names of the instances the backend keeps. */
  inventory(): Promise<string[]>;
  /** Instances per name where they really are: processes, libvirt domains, the fake's VMs or Pods. */
  counts(): Promise<Map<string, number>>;
  close(): Promise<void>;
}

export const tally = (names: string[]) => {
  const counts = new Map<string, number>();
  for (const n of names) counts.set(n, (counts.get(n) ?? 0) + 1);
  return counts;
};

/** A relay backend's part of a ground: its config entry, the placement of variant 1, its instances. */
export interface RelayBackendGround {
  type: ProviderType;
  placement: Record<string, unknown>;
  /** The relay config entry of the backend. */
  backend(stateDir: string): Record<string, unknown>;
  /** Config fields of the functions' side this backend needs. */
  config?: Record<string, unknown>;
  /** The relay's hooks this backend needs (its probe). */
  harness?: Pick<RelayHarnessOptions, 'probe'>;
  /** Instances per name where they really are. */
  counts(h: RelayHarness): Promise<Map<string, number>>;
  /** Stops what the backend runs on besides the relay (a libvirt daemon). */
  close?(): Promise<void>;
}

/** A real relay agent with `b`'s backend, commands and reports over the emulators. */
export async function relayGround(o: GroundOptions, b: RelayBackendGround): Promise<Ground> {
  const providers = [
    {
      name: o.provider,
      type: b.type,
      relay: o.name,
      catalogue: { alt: b.placement },
      rolloutBudget: 50,
      options: { heartbeatTimeoutSeconds: 30, ...o.relayOptions },
    },
  ];
  const h = await startRelayHarness(
    o.name,
    o.ports,
    { ...o.config, ...b.config, providers },
    { ...o.harness, backends: (stateDir) => [b.backend(stateDir)], ...b.harness },
  ).catch(async (err: unknown) => {
    await b.close?.();
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
    placement: b.placement,
    item: (instance) => h.relays.instance(o.name, instance),
    inventory: async () => (await h.relays.instances(o.name)).map((i) => i.name),
    counts: () => b.counts(h),
    async close() {
      await h.close();
      await b.close?.();
    },
  };
}

/** The fake's side of a cloud ground: provider entry, placement of variant 1, and its instances. */
export interface CloudFake {
  type: ProviderType;
  entry: Record<string, unknown>;
  placement: Record<string, unknown>;
  /** Live instance names (one entry per VM or Pod, however far it is in its life). */
  names(): string[];
  close(): Promise<void>;
}

/** The functions' side of a cloud provider over `fake`, its documents on the Firestore emulator. */
export async function cloudGround(o: GroundOptions, fake: CloudFake): Promise<Ground> {
  const kind = fake.type;
  const emu = emulatorEnv(o.name);
  mkdirSync('test-results', { recursive: true });
  const logger = createLogger({
    write: (l) => {
      appendFileSync(`test-results/${o.name}.log`, `${l}\n`);
      o.harness.onLog?.(l);
    },
    level: 'DEBUG',
  });
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
