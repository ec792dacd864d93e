/**
 * Stored fleets in a settled, healthy state: the real reconcile computes each proxy's status (with
 * its writes captured in memory), then proxies, credentials and the relay inventory are bulk-written.
 */
import { randomUUID } from 'node:crypto';
import type { Firestore } from '@google-cloud/firestore';
import type { Bus } from '../shared/bus/pubsub.js';
import { instanceName } from '../shared/domain/names.js';
import { specHash } from '../shared/domain/spec-hash.js';
import { initialStatus, type ProxyDoc, type ProxyStatus } from '../shared/domain/status.js';
import type { Instance, Provider } from '../shared/providers/contract.js';
import type { Registry } from '../shared/providers/contract.js';
import { createRegistry } from '../shared/providers/registry.js';
import { newCheckBatch } from '../shared/reconcile/batch.js';
import { reconcileProxy } from '../shared/reconcile/reconcile.js';
import type { InventoryItem, RelayReport } from '../shared/wire/protocol.js';
import { createFirestore } from '../shared/store/firestore/client.js';
import { generateCredentials } from '../shared/store/credentials-memo.js';
import type { ProxyEvent } from '../shared/store/records.js';
import type { Credentials } from '../shared/store/ports.js';
import { FirestoreProxyRepository } from '../shared/store/firestore/proxies.js';
import { FirestoreRelayRepository } from '../shared/store/firestore/relays.js';
import { PROVIDER, RELAY_ID, type CheckEnv } from './check-env.js';

/** The stored fleet and what the bench needs to keep it healthy. */
export interface SeededFleet {
  names: string[];
  /** Relay-backed fleets: the relay's inventory as stored. */
  items: InventoryItem[];
  /** A report from the relay with every instance freshly probed at `now` (nothing changed). */
  report(seq: number, now: number): RelayReport;
}

/** Proxy names sort in creation order: `p-00000`, `p-00001`, … */
export const proxyName = (i: number) => `p-${String(i).padStart(5, '0')}`;

/** A distinct egress IP per proxy, so no proxy is flagged as sharing one. */
export function egressIpOf(i: number): string {
  return `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
}

/** The index in a bench proxy's name or username (`u-p-00042` → 42). */
export function indexOf(name: string): number {
  return Number(/(\d+)$/.exec(name)?.[1] ?? -1);
}

/** A provider standing in for a cloud API: every instance Running on one of the pool's proxies. */
export function createPoolProvider(ports: number[], installationId: string, createdAt: number): Provider {
  const hash = specHash({ provider: PROVIDER.direct, placement: {}, port: 0 }, {});
  const instance = (name: string): Instance => {
    // `ep-p-00042-1a2b3c4d` belongs to proxy `p-00042`.
    const i = indexOf(name.replace(/-[0-9a-f]{8}$/, ''));
    const port = ports[Math.max(0, i) % ports.length] ?? 0;
    const proxy = proxyName(i);
    return { name, proxy, installationId, specHash: hash, state: 'Running', ip: '127.0.0.1', port, createdAt };
  };
  return {
    name: PROVIDER.direct,
    type: 'gcp',
    probesRemotely: false,
    resolvePlacement: (p) => p,
    create: (spec) => Promise.resolve(instance(spec.name)),
    get: (name) => Promise.resolve(instance(name)),
    delete: () => Promise.resolve(),
    list: () => Promise.resolve([]),
    check: () => Promise.resolve({ ok: true, message: 'bench pool', latencyMs: 0 }),
  };
}

/** Captures what reconcile would write, so the settled status can be bulk-written afterwards. */
class RecordingStore extends FirestoreProxyRepository {
  readonly statuses = new Map<string, ProxyStatus>();
  constructor(
    db: Firestore,
    private readonly creds: Map<string, Credentials>,
  ) {
    super(db, { debug() {}, info() {}, warn() {}, error() {}, child: () => silent });
  }
  override writeStatus(name: string, _generation: number, status: ProxyStatus): Promise<boolean> {
    this.statuses.set(name, status);
    return Promise.resolve(true);
  }
  override addEvent(_name: string, _event: ProxyEvent): Promise<void> {
    return Promise.resolve();
  }
  override sharingEgressIp(): Promise<string[]> {
    return Promise.resolve([]);
  }
  override credentials(name: string): Promise<Credentials | undefined> {
    return Promise.resolve(this.creds.get(name));
  }
}
const silent = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };

async function pool<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++] as T);
  };
  await Promise.all(Array.from({ length: limit }, worker));
}

/**
 * Seeds `n` healthy proxies of `env.kind` into `env.config.project`.
 *
 * One seeding pass, in the order its parts depend on: the relay's inventory, then each proxy
 * reconciled once to its settled status and written in bulk with its credentials.
 *
 * @param direct - the pool provider (kind `direct`)
 */
export async function seedFleet(env: CheckEnv, n: number, direct?: Provider): Promise<SeededFleet> {
  const { config } = env;
  const db = createFirestore(config.project);
  const now = Date.now();
  const names = Array.from({ length: n }, (_, i) => proxyName(i));
  const provider = PROVIDER[env.kind];
  const hash = specHash({ provider, placement: {}, port: 0 }, {});
  const creds = new Map(names.map((name) => [name, generateCredentials(name)]));
  const items: InventoryItem[] = names.map((name, i) => ({
    name: instanceName(config.installationId, name),
    proxy: name,
    installationId: config.installationId,
    specHash: hash,
    state: 'Running',
    ip: '127.0.0.1',
    port: 30000 + (i % 30000),
    createdAt: now - 3600_000,
    provider,
    health: {
      lastProbeAt: new Date(now).toISOString(),
      ok: true,
      latencyMs: 4,
      egressIp: egressIpOf(i),
      consecutiveFailures: 0,
    },
  }));
  const startedAt = now - 3600_000;
  const bootId = randomUUID();
  const report = (seq: number, at: number): RelayReport => ({
    relay: RELAY_ID,
    bootId,
    seq,
    sentAt: at,
    startedAt,
    providers: [{ name: provider, type: 'process', ok: true, message: 'ok' }],
    instances: items.map((item) => ({
      ...item,
      health: item.health && { ...item.health, lastProbeAt: new Date(at).toISOString(), latencyMs: 3 + (seq % 3) },
    })),
    results: [],
  });

  const writer = db.bulkWriter();
  const written: Promise<unknown>[] = [];
  if (env.kind === 'relay') {
    const relays = db.collection('relays').doc(RELAY_ID);
    const relayDoc = {
      bootId,
      seq: 0,
      sentAt: now,
      startedAt,
      heartbeatAt: now,
      providers: [{ name: provider, type: 'process', ok: true, message: 'ok' }],
      // A relay that has been reporting for a while, with no instance changed lately.
      changes: '{}',
    };
    written.push(writer.set(relays, relayDoc));
    for (const item of items) written.push(writer.set(relays.collection('instances').doc(item.name), item));
    await writer.flush();
  }

  const recorder = new RecordingStore(db, creds);
  const bus: Bus = { publish: () => Promise.resolve('seed') };
  const registry: Registry = direct
    ? { get: (p) => (p === direct.name ? direct : undefined), missing: () => 'none', all: () => [direct] }
    : createRegistry({ config, relays: new FirestoreRelayRepository(db, silent), bus, logger: silent });
  const docs = names.map((name): ProxyDoc => ({
    apiVersion: 'egress.dev/v1',
    kind: 'Proxy',
    metadata: { name, labels: {} },
    spec: { provider, placement: {}, port: 0 },
    generation: 1,
    requestTime: now - 3600_000,
    createdAt: new Date(now - 3600_000).toISOString(),
    status: { ...initialStatus(), everCreated: true },
  }));
  const batch = newCheckBatch();
  await pool(docs, 32, async (doc) => {
    // Not read from the store: a fenced write (a lease) on this readAt would be refused, and none is needed.
    const stored = { doc, readAt: new Date(now).toISOString() };
    await reconcileProxy({ config, proxies: recorder, registry, logger: silent }, stored, batch);
  });
  for (const doc of docs) {
    const status = recorder.statuses.get(doc.metadata.name);
    if (status?.phase !== 'Ready') throw new Error(`seeding: ${doc.metadata.name} settled as ${status?.phase}`);
    // A settled fleet: each proxy's egress IP already compared again after it was stored (egress.ts).
    const settled = status.egress ? { ...status, egress: { ...status.egress, confirmed: true } } : status;
    written.push(writer.set(db.collection('proxies').doc(doc.metadata.name), { ...doc, status: settled }));
    const credentials = { ...creds.get(doc.metadata.name), createdAt: doc.createdAt };
    written.push(writer.set(db.collection('credentials').doc(doc.metadata.name), credentials));
  }
  await writer.close();
  await Promise.all(written);
  await db.terminate();
  return { names, items, report };
}
