/**
 * The control plane's own contention at small scale, on the real emulators (docs/guarantees.md,
 * "Converge after chaos"): one caller's reports about many proxies at once, racing status writes of
 * a check sweep on the same proxies. Every report must be answered 202, none lost to ABORTED.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiDeps } from '../../shared/api/deps.js';
import type { ApiResponse } from '../../shared/api/http.js';
import type { Bus } from '../../shared/bus/pubsub.js';
import { parseConfig } from '../../shared/config/load.js';
import type { ProxyStatus } from '../../shared/domain/status.js';
import { createLogger } from '../../shared/logger.js';
import { createFirestore } from '../../shared/store/firestore/client.js';
import { FirestoreProviderStatusRepository } from '../../shared/store/firestore/providers.js';
import { FirestoreProxyRepository } from '../../shared/store/firestore/proxies.js';
import { FirestoreRelayRepository } from '../../shared/store/firestore/relays.js';
import { FirestoreReportRepository } from '../../shared/store/firestore/reports.js';
import type { TransactionRecord } from '../../shared/store/firestore/transaction.js';
import { callApi } from '../support/api-call.js';
import { emulatorEnv } from '../support/emulator-env.js';

const TOKEN = 'converge-token-0123456789abcdef';
/** Proxies reported at once, and reports about each (one caller: the gateway's token). */
const PROXIES = 24;
const ROUNDS = 3;

const emu = emulatorEnv('converge');
const db = createFirestore(emu.projectId);
const lines: Record<string, unknown>[] = [];
const logger = createLogger({
  level: 'DEBUG',
  write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>),
});
const proxies = new FirestoreProxyRepository(db, logger);
const names = Array.from({ length: PROXIES }, (_, i) => `cv-${i}`);
/** The checks the bans asked for (the bus is not what is tested here). */
const kicked: unknown[] = [];
const bus: Bus = {
  publish: (_topic, body) => {
    kicked.push(body);
    return Promise.resolve(String(kicked.length));
  },
};
let deps: ApiDeps;

/** A transaction's log line (shared/store/firestore/transaction.ts). */
function isTransaction(v: unknown): v is TransactionRecord {
  return typeof v === 'object' && v !== null && 'kind' in v && 'reads' in v && 'attempts' in v;
}

function readyStatus(name: string, createdAt: number, now: number): ProxyStatus {
  return {
    phase: 'Ready',
    observedGeneration: 1,
    address: `127.0.0.1:${21000 + names.indexOf(name)}`,
    instance: {
      name: `ep-${name}`,
      ip: '127.0.0.1',
      port: 21000,
      state: 'Running',
      createdAt: new Date(createdAt).toISOString(),
      specHash: 'h',
    },
    conditions: [],
    health: { ok: true, consecutiveFailures: 0, lastProbeAt: new Date(now).toISOString(), latencyMs: 4 },
  };
}

beforeAll(async () => {
  deps = {
    config: parseConfig({
      installationId: 'it',
      echoUrl: 'http://127.0.0.1:9/',
      apiTokens: [TOKEN],
      reports: { perCallerPerMinute: 10_000, excludeSeconds: 600, banTargets: 3, banWindowSeconds: 3600 },
      providers: [{ name: 'local', type: 'process', relay: 'r1' }],
    }),
    proxies,
    relays: new FirestoreRelayRepository(db, logger),
    reports: new FirestoreReportRepository(db, logger),
    providerStatus: new FirestoreProviderStatusRepository(db),
    bus,
    logger,
  };
  const now = Date.now();
  for (const name of names) {
    await proxies.apply(
      {
        apiVersion: 'egress.dev/v1',
        kind: 'Proxy',
        action: 'apply',
        metadata: { name, labels: {} },
        spec: { provider: 'local', placement: {}, port: 0 },
      },
      now,
      now,
    );
    expect(await proxies.writeStatus(name, 1, readyStatus(name, now - 60_000, now), now)).toBe(true);
  }
});
afterAll(() => db.terminate());

describe('converge: one caller reporting many proxies at once, racing a check sweep', () => {
  it('answers every report 202, none ABORTED, each transaction on its own proxy documents', async () => {
    const started = Date.now();
    const reports: Promise<ApiResponse>[] = [];
    for (let round = 0; round < ROUNDS; round++)
      for (const name of names)
        reports.push(
          callApi(
            deps,
            'POST',
            `/v1/proxies/${name}/reports`,
            { reason: 'error', target: `site-${round}.example`, detail: 'connection reset' },
            TOKEN,
          ),
        );
    // A check sweep writing every proxy's status meanwhile (the writes a report races in `check`).
    const sweep = Promise.all(
      names.map(async (name) => {
        const stored = await proxies.get(name);
        if (!stored) throw new Error(`${name} vanished`);
        const now = Date.now();
        return proxies.writeStatus(name, 1, { ...stored.doc.status, health: readyStatus(name, 0, now).health }, now);
      }),
    );
    const answers = await Promise.all(reports);
    await sweep;
    const elapsed = Date.now() - started;
    const unavailable = answers.filter((a) => a.status !== 202);
    const logged = lines.flatMap((l) => (isTransaction(l['transaction']) ? [l['transaction']] : []));
    const reportTx = logged.filter((t) => t.kind === 'report');
    const retried = reportTx.filter((t) => t.attempts > 1);
    console.log(
      `converge: ${reports.length} reports in ${elapsed} ms; not 202: ${unavailable.length}; ` +
        `report transactions logged ${reportTx.length}, retried ${retried.length}, ` +
        `longest wait ${Math.max(0, ...reportTx.map((t) => t.waitMs))} ms`,
    );
    expect(unavailable.length, JSON.stringify(unavailable.slice(0, 3))).toBe(0);
    for (const name of names) expect((await proxies.get(name))?.doc.status.reports?.error, name).toBe(ROUNDS);
    // Each report's transaction touched its own proxy's documents and nothing shared.
    expect(reportTx).toHaveLength(reports.length);
    for (const t of reportTx) {
      const own = /^proxies\/(cv-\d+)(\/|$)/.exec(t.reads[0] ?? '')?.[1];
      for (const path of [...t.reads, ...t.writes])
        expect(path, JSON.stringify(t)).toMatch(new RegExp(`^proxies/${own}(/|$)`));
    }
  }, 120_000);
});
