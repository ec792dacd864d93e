/** The cost figures the docs state are the tool's: deploy.md's example bill, and the bench rows control-plane.json repeats. */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCommand } from '../../cli/args.js';
import { costEstimate, formatEstimate } from '../../cli/cost.js';
import { CONTROL_PLANE } from '../../shared/cost/control-plane.js';

const root = resolve(import.meta.dirname, '..', '..');
const doc = (name: string) => readFileSync(resolve(root, 'docs', name), 'utf8');

describe('egress cost: the docs', () => {
  it("deploy.md's example prints exactly what the tool prints for it", () => {
    const text = doc('deploy.md');
    const m = /```sh\negress (cost [^\n]+)\n```\n\n```text\n([\s\S]*?)```/.exec(text);
    expect(m, 'deploy.md has an `egress cost` command followed by its output').not.toBeNull();
    const command = parseCommand((m?.[1] ?? '').split(' '));
    if (command.verb !== 'cost') throw new Error('not a cost command');
    expect(m?.[2]).toBe(formatEstimate(costEstimate({ cwd: root }, command)));
  });

  it('control-plane.json holds the monthly cost rows of docs/performance.md#the-table', () => {
    const table = doc('performance.md').split('## The table')[1]?.split('\n## ')[0] ?? '';
    for (const [kind, label] of [
      ['directlyProbed', 'directly probed'],
      ['relayBacked', 'relay-backed'],
    ] as const) {
      for (const [size, usd] of Object.entries(CONTROL_PLANE.monthlyUsd[kind])) {
        const row = new RegExp(
          `\\| monthly cost, ${size} proxies, ${CONTROL_PLANE.intervalSeconds}-s interval, warm check instance, ${label}[^|]*\\|[^|]*\\|\\s*\\$([\\d.]+)`,
        ).exec(table);
        expect(row, `${kind} ${size}`).not.toBeNull();
        expect(Number(row?.[1]), `${kind} ${size}`).toBe(usd);
      }
    }
  });
});
