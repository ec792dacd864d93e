/**
 * The Firestore store held to the store contract (test/support/store-contract.ts), on the emulator,
 * and the Firestore indexes of infra/terraform checked against the queries it ran.
 */
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findTopologyFile } from '../../infra/local/topology.js';
import { checkIndexes, queryShape } from '../../infra/terraform/firestore-indexes.js';
import { readTerraformDir } from '../../infra/terraform/hcl-files.js';
import { createLogger } from '../../shared/logger.js';
import { createFirestore } from '../../shared/store/firestore.js';
import { PoolStore } from '../../shared/store/pools.js';
import { ProviderStore } from '../../shared/store/providers.js';
import { ProxyStore } from '../../shared/store/proxies.js';
import { RelayStore } from '../../shared/store/relays.js';
import { ReportStore } from '../../shared/store/reports.js';
import { emulatorEnv } from '../support/emulator-env.js';
import { recordQueries, type RecordedQuery } from '../support/query-recorder.js';
import { storeContract } from '../support/store-contract.js';

const logger = createLogger({ write: () => undefined });

storeContract('firestore', (heartbeatMs) => {
  // A project of its own per test: an empty store.
  const db = createFirestore(emulatorEnv('store').projectId);
  return Promise.resolve({
    proxies: new ProxyStore(db, logger),
    relays: new RelayStore(db, logger, heartbeatMs),
    pools: new PoolStore(db, logger),
    providerStatus: new ProviderStore(db),
    reports: new ReportStore(db, logger),
    close: () => db.terminate(),
  });
});

// The composite indexes infra/terraform declares are exactly what these queries need (both ways).
const recorded: RecordedQuery[] = [];
let stopRecording: () => void = () => undefined;
beforeAll(() => {
  stopRecording = recordQueries(recorded);
});
afterAll(() => stopRecording());

describe('terraform schema: Firestore indexes', () => {
  it('firestore.tf declares the composite indexes the store contract’s queries need, and no other', async () => {
    const tf = await readTerraformDir(join(dirname(dirname(findTopologyFile())), 'infra', 'terraform'));
    const shapes = recorded.map((r) => queryShape(r.structuredQuery, r.source));
    // The queries of every store were seen (the contract calls each store's reads).
    expect([...new Set(shapes.map((s) => s.collection))]).toEqual(
      expect.arrayContaining(['proxies', 'pools', 'events', 'instances']),
    );
    expect(checkIndexes(shapes, tf.resources)).toEqual([]);
  }, 30_000);
});
