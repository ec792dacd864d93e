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
import { createFirestore } from '../../shared/store/firestore/client.js';
import { FirestorePoolRepository } from '../../shared/store/firestore/pools.js';
import { FirestoreProviderStatusRepository } from '../../shared/store/firestore/providers.js';
import { FirestoreProxyRepository } from '../../shared/store/firestore/proxies.js';
import { FirestoreRelayRepository } from '../../shared/store/firestore/relays.js';
import { FirestoreReportRepository } from '../../shared/store/firestore/reports.js';
import { emulatorEnv } from '../support/emulator-env.js';
import { recordQueries, type RecordedQuery } from '../support/query-recorder.js';
import { storeContract } from '../support/store-contract.js';

const logger = createLogger({ write: () => undefined });

storeContract('firestore', (heartbeatMs) => {
  // A project of its own per test: an empty store.
  const db = createFirestore(emulatorEnv('store').projectId);
  return Promise.resolve({
    proxies: new FirestoreProxyRepository(db, logger),
    relays: new FirestoreRelayRepository(db, logger, heartbeatMs),
    pools: new FirestorePoolRepository(db, logger),
    providerStatus: new FirestoreProviderStatusRepository(db),
    reports: new FirestoreReportRepository(db, logger),
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
