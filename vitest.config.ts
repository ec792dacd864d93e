/**
 * Test projects, in three groups: `unit` (beside the sources) and `integration` (real emulators);
 * then `guests` (real qemu guests), `e2e` (the local stack) and `waits` (integration files that
 * mostly wait on real time); then `chaos` (the live stack under faults). One `vitest run` runs the
 * groups in turn, guest files one at a time, e2e files two at a time; `npm test` (scripts/test.mjs)
 * runs `guests`, `e2e` and `waits` as three vitest processes at once.
 */
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Files at once in the unit and integration projects (one group: they must agree). Vitest's
 * default on 2 cores is one (cores - 1), which ran the whole suite file by file; the integration
 * files mostly wait on the emulators and on processes of their own, and each has its own project
 * id, port range (relay harnesses) and namespaces (random free index), so several run side by side.
 * Three: with two, `vmstat 5` showed the CPU 45 % idle on average through the phase (357 s); with
 * three it took 262 s.
 */
const PARALLEL_FILES = 3;

/** The short chaos run on the live stack (test/chaos/). */
const CHAOS_TEST = 'test/e2e/chaos.test.ts';

/**
 * Integration files that mostly wait on real time (the relay subscription's 20 s ack deadline, and
 * holding a command past it): `npm test` runs them beside the end-to-end files, the lane with room,
 * rather than in the phase that has only the integration files (which it would lengthen by ~25 s).
 */
const WAITING_TESTS = ['test/integration/relay-lost-pull.test.ts'];

/** The tests that boot real guests under libvirt's qemu driver (test/support/qemu-host.ts). */
const GUEST_TESTS = ['test/integration/kvm-guest.test.ts', 'test/providers/contract-guests.test.ts'];

/**
 * Files that take minutes, longest first (seconds in CI run 10 of 2026-12-07): they start first in
 * their project. Vitest orders files by the durations it cached in an earlier run; a clean clone has
 * none, and its fallback (larger files first) started pool-rotation.test.ts (183 s, 5 KB) at 299 s
 * of a 483 s phase. A name missing here only starts later; a stale one changes nothing else.
 */
const SLOW_FILES = [
  'test/guarantees/crash-points.test.ts', // 202 s
  'test/integration/pool-rotation.test.ts', // 183 s
  'test/guarantees/redelivery.test.ts', // 159 s
  'test/guarantees/concurrency.test.ts', // 121 s
  'test/integration/pools.test.ts', // 78 s
  'test/e2e/pools.test.ts', // 160 s
  'test/integration/kvm-guest.test.ts', // 238 s
];

/** Vitest's order, with the {@link SLOW_FILES} first within their project. */
class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = SLOW_FILES.findIndex((slow) => f.moduleId.endsWith(`/${slow}`));
      return i < 0 ? SLOW_FILES.length : i;
    };
    // Projects stay in the blocks vitest put them in; only the order within a block changes (the
    // sort is stable: other files keep vitest's order).
    const block = new Map<string, number>();
    for (const f of sorted) if (!block.has(f.project.name)) block.set(f.project.name, block.size);
    const blockOf = (f: TestSpecification) => block.get(f.project.name) ?? 0;
    return sorted.sort((a, b) => blockOf(a) - blockOf(b) || rank(a) - rank(b));
  }
}

export default defineConfig({
  test: {
    sequence: { sequencer: SlowFirst },
    reporters: ['default', 'json'],
    outputFile: { json: 'test-results/vitest.json' },
    projects: [
      {
        test: {
          name: 'unit',
          sequence: { groupOrder: 0 },
          maxWorkers: PARALLEL_FILES,
          include: ['{shared,relay,functions,cli,gateway,infra,bench}/**/*.test.ts', 'test/docs/**/*.test.ts'],
        },
      },
      {
        test: {
          name: 'integration',
          sequence: { groupOrder: 0 },
          include: ['test/integration/**/*.test.ts', 'test/providers/**/*.test.ts', 'test/guarantees/**/*.test.ts'],
          exclude: [...GUEST_TESTS, ...WAITING_TESTS],
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
          // Real qemu guests emulate their CPUs (TCG): after the timing-sensitive integration files;
          // npm test runs them beside the e2e files, which mostly wait on their stack.
          sequence: { groupOrder: 1 },
          // One guest file at a time: their guests already take both cores.
          maxWorkers: 1,
          testTimeout: 30_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'waits',
          include: WAITING_TESTS,
          globalSetup: ['test/support/global-setup.ts'],
          sequence: { groupOrder: 1 },
          testTimeout: 90_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          exclude: [CHAOS_TEST],
          sequence: { groupOrder: 1 },
          // Two files at once: each starts a stack of its own (its own EGRESS_PORT_OFFSET, home,
          // relay state, fence uids and nft tables), and mostly waits on it.
          maxWorkers: 2,
          testTimeout: 180_000,
          hookTimeout: 180_000,
        },
      },
      {
        test: {
          name: 'chaos',
          include: [CHAOS_TEST],
          // Last and alone: its faults and its bounded settling want the machine to themselves.
          sequence: { groupOrder: 2 },
          fileParallelism: false,
          testTimeout: 180_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
