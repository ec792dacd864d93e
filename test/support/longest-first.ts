/**
 * The order files start in: vitest's own (failed first, then longest by its cache of earlier runs;
 * with no cache, as on a clean clone in CI, largest file first), except that the files known to
 * take longest start first within their project. On a clean clone the size order started the
 * 190 s pool-rotation file 300 s into the integration phase, the last to finish (CI12: phase
 * 528 s for 1,245 s of files on three workers).
 */
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Longest first, as a clean-clone CI run measured them (CI12: 236, 189, 147 and 121 s). */
export const LONGEST_FILES = [
  'test/guarantees/crash-points.test.ts',
  'test/integration/pool-rotation.test.ts',
  'test/guarantees/redelivery.test.ts',
  'test/guarantees/concurrency.test.ts',
];

export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const projectOrder = new Map<string, number>();
    for (const f of sorted) if (!projectOrder.has(f.project.name)) projectOrder.set(f.project.name, projectOrder.size);
    const rank = (f: TestSpecification) => {
      const i = LONGEST_FILES.indexOf(relative(this.ctx.config.root, f.moduleId));
      return i < 0 ? LONGEST_FILES.length : i;
    };
    const keyed = sorted.map((f, at) => ({ f, at, project: projectOrder.get(f.project.name) ?? 0, rank: rank(f) }));
    keyed.sort((a, b) => a.project - b.project || a.rank - b.rank || a.at - b.at);
    return keyed.map((k) => k.f);
  }
}
