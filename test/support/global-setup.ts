/** Integration global setup: starts the real emulators once on free ports and shares their hosts. */
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { freePort, startEmulators } from '../../infra/local/emulators.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** `HOST:PORT` of the Firestore emulator. */
    firestoreHost: string;
    /** `HOST:PORT` of the Pub/Sub emulator. */
    pubsubHost: string;
  }
}

const HOST = '127.0.0.1';

/**
 * Starts the emulators, provides their hosts, and sets the client variables the workers inherit.
 *
 * @returns the teardown, which stops both emulators
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const firestorePort = await freePort(HOST);
  let pubsubPort = await freePort(HOST);
  while (pubsubPort === firestorePort) pubsubPort = await freePort(HOST);
  const emulators = await startEmulators({
    host: HOST,
    firestorePort,
    pubsubPort,
    logDir: join(project.config.root, 'test-results', 'emulators'),
  });
  project.provide('firestoreHost', emulators.firestoreHost);
  project.provide('pubsubHost', emulators.pubsubHost);
  process.env['FIRESTORE_EMULATOR_HOST'] = emulators.firestoreHost;
  process.env['PUBSUB_EMULATOR_HOST'] = emulators.pubsubHost;
  // Without it each Google client spends over a second probing for a metadata server.
  process.env['METADATA_SERVER_DETECTION'] = 'none';
  return () => emulators.stop();
}
