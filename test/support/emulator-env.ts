/** For integration tests: the emulators' hosts and a project id of this test file's own. */
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { clearFirestore } from '../../infra/local/emulators.js';

/** What an integration test needs to reach the emulators. */
export interface EmulatorEnv {
  /** `HOST:PORT` of the Firestore emulator. */
  firestoreHost: string;
  /** `HOST:PORT` of the Pub/Sub emulator. */
  pubsubHost: string;
  /** A fresh project id: the emulators keep each project's data apart, so files never collide. */
  projectId: string;
  /** Environment for `loadConfig(env)` and clients: project and emulator hosts. */
  env: Record<string, string>;
  /** Deletes every Firestore document of `projectId`. */
  clearFirestore(): Promise<void>;
}

/**
 * Call once per test file (at module level or in `beforeAll`); each call returns a new project id.
 *
 * @param prefix - readable start of the project id (lowercase letters, digits, `-`)
 * @example
 * const emu = emulatorEnv('store');
 * const db = new Firestore({ projectId: emu.projectId, host: emu.firestoreHost, ssl: false });
 */
export function emulatorEnv(prefix = 'it'): EmulatorEnv {
  const firestoreHost = inject('firestoreHost');
  const pubsubHost = inject('pubsubHost');
  const projectId = `${prefix}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
  return {
    firestoreHost,
    pubsubHost,
    projectId,
    env: {
      EGRESS_PROJECT: projectId,
      GOOGLE_CLOUD_PROJECT: projectId,
      FIRESTORE_EMULATOR_HOST: firestoreHost,
      PUBSUB_EMULATOR_HOST: pubsubHost,
      METADATA_SERVER_DETECTION: 'none',
    },
    clearFirestore: () => clearFirestore(firestoreHost, projectId),
  };
}
