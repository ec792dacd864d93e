/** Test projects: `unit` (beside the sources), `integration` (real emulators), `e2e` (the local stack), `guests` (real qemu guests, last). */
import { defineConfig } from 'vitest/config';

/**
 * Files at once in the unit and integration projects (one group: they must agree). Vitest's
 * default on 2 cores is one (cores - 1), which ran the whole suite file by file; the integration
 * files mostly wait on the emulators and on processes of their own, and each has its own project
 * id, port range (relay harnesses) and namespaces (random free index), so two run side by side.
 */
const PARALLEL_FILES = 2;

/** The tests that boot real guests under libvirt's qemu driver (test/support/qemu-host.ts). */
const GUEST_TESTS = ['test/integration/kvm-guest.test.ts', 'test/providers/kvm.test.ts'];

export default defineConfig({
  test: {
    reporters: ['default', 'json'],
    outputFile: { json: 'test-results/vitest.json' },
    projects: [
      {
        test: {
          name: 'unit',
          maxWorkers: PARALLEL_FILES,
          include: ['{shared,relay,functions,cli,gateway,infra,bench}/**/*.test.ts', 'test/docs/**/*.test.ts'],
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts', 'test/providers/**/*.test.ts', 'test/guarantees/**/*.test.ts'],
          exclude: GUEST_TESTS,
          maxWorkers: PARALLEL_FILES,
          // Starts the Firestore and Pub/Sub emulators once; each test file uses its own project id.
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'guests',
          include: GUEST_TESTS,
          globalSetup: ['test/support/global-setup.ts'],
          // Real qemu guests emulate their CPUs (TCG): they run after every other project, so their
          // load neither slows nor is slowed by the timing-sensitive tests.
          sequence: { groupOrder: 1 },
          // One guest file at a time: their guests already take both cores.
          maxWorkers: 1,
          testTimeout: 30_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          // The files share one local stack (fixed ports from firebase.json): one file at a time.
          fileParallelism: false,
          testTimeout: 180_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
