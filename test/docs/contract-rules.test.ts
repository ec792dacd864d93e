/**
 * `docs/providers.md` lists exactly `CONTRACT_RULES`, every `rule <id>` cited in code or docs is one
 * of them, and every MUST rule has a conformance case or a stated exemption.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONTRACT_RULES } from '../../shared/providers/contract-rules.js';
import { CONTRACT_CASES, CONTRACT_EXEMPTIONS } from '../providers/contract-cases.js';
import { proseLines } from './markdown.js';

const root = resolve(import.meta.dirname, '..', '..');
const ID = '[a-z0-9]+(?:-[a-z0-9]+)+';
/** `rule create-adopts`, `rules created-at-nonzero, dead-is-stopped and typed-errors`. */
const CITED = new RegExp(`\\brules? (${ID}(?:(?:, | and )${ID})*)`, 'gi');
/** A rule cited by number, which drifts when the table changes. */
const NUMBERED = /\b(?:contract )?rules? \d+\b/gi;

/** The rule rows of the `## Rules` table: number, id, text, level. */
export function ruleRows(markdown: string): { n: number; id: string; text: string; level: string }[] {
  const lines = proseLines(markdown);
  const start = lines.findIndex((l) => /^## Rules/.test(l));
  const end = lines.findIndex((l, i) => i > start && /^## /.test(l));
  return lines
    .slice(start, end)
    .filter((l) => /^\|\s*\d+\s*\|/.test(l))
    .map((l) => {
      const [n = '', id = '', text = '', level = ''] = l.split(/\s*\|\s*/).slice(1);
      return { n: Number(n), id: id.replace(/`/g, ''), text, level };
    });
}

/** `rule <id>` citations in `text` whose id is not a contract rule, and rules cited by number. */
export function badCitations(text: string, ids: ReadonlySet<string>): string[] {
  const unknown = [...text.matchAll(CITED)].flatMap((m) => (m[1] ?? '').split(/, | and /).filter((id) => !ids.has(id)));
  return [...unknown.map((id) => `unknown rule ${id}`), ...[...text.matchAll(NUMBERED)].map((m) => m[0])];
}

/** MUST rules with neither a conformance case nor an exemption, and keys that are not rules or say nothing. */
export function uncheckedRules(
  rules: readonly { id: string; level: string }[],
  cases: Record<string, string>,
  exemptions: Record<string, string | undefined>,
): string[] {
  const known = new Set(rules.map((r) => r.id));
  const missing = rules
    .filter((r) => r.level === 'MUST' && !cases[r.id] && !exemptions[r.id])
    .map((r) => `MUST rule ${r.id} has no case and no exemption`);
  const stray = [...Object.keys(cases), ...Object.keys(exemptions)]
    .filter((id) => !known.has(id))
    .map((id) => `${id} is not a rule`);
  const both = Object.keys(exemptions)
    .filter((id) => cases[id])
    .map((id) => `${id} has a case and an exemption`);
  const silent = Object.entries(exemptions)
    .filter(([, reason]) => !reason)
    .map(([id]) => `${id}: an exemption must say why`);
  return [...missing, ...stray, ...both, ...silent];
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    if (['node_modules', 'dist', '.git', '.egress', 'test-results'].includes(d.name)) return [];
    const path = join(dir, d.name);
    if (d.isDirectory()) return sources(path);
    return /\.(ts|mjs|js|md)$/.test(d.name) ? [path] : [];
  });
}

const ids = new Set(CONTRACT_RULES.map((r) => r.id));

describe('provider contract rules: one table in code', () => {
  it('docs/providers.md lists exactly CONTRACT_RULES, in order, with the same id, text and level', () => {
    const rows = ruleRows(readFileSync(join(root, 'docs', 'providers.md'), 'utf8'));
    const expected = CONTRACT_RULES.map((r, i) => ({ n: i + 1, id: r.id, text: r.text, level: r.level }));
    expect(rows).toEqual(expected);
  });

  it('ids are unique kebab-case labels', () => {
    expect(ids.size).toBe(CONTRACT_RULES.length);
    for (const { id } of CONTRACT_RULES) expect(id).toMatch(new RegExp(`^${ID}$`));
  });

  it('every rule cited in code and docs is in the table, by id, never by number', () => {
    const self = resolve(import.meta.filename);
    const problems = sources(root).flatMap((file) => {
      if (file === self) return [];
      const text = readFileSync(file, 'utf8');
      return badCitations(text, ids).map((p) => `${relative(root, file)}: ${p}`);
    });
    expect(problems).toEqual([]);
  });

  it('every MUST rule has a conformance case (test/providers/contract-cases.ts) or a stated exemption', () => {
    expect(uncheckedRules(CONTRACT_RULES, CONTRACT_CASES, CONTRACT_EXEMPTIONS)).toEqual([]);
  });

  it('finds a MUST rule without a case or exemption, and cases keyed by no rule', () => {
    const rules = [
      { id: 'a-rule', level: 'MUST' },
      { id: 'b-rule', level: 'MUST' },
      { id: 'c-rule', level: 'SHOULD' },
    ];
    expect(uncheckedRules(rules, { 'a-rule': 'x' }, { 'b-rule': 'elsewhere' })).toEqual([]);
    expect(uncheckedRules(rules, { 'a-rule': 'x' }, {})).toEqual(['MUST rule b-rule has no case and no exemption']);
    expect(uncheckedRules(rules, { 'a-rule': 'x', 'z-rule': 'y' }, { 'b-rule': '' })).toEqual([
      'MUST rule b-rule has no case and no exemption',
      'z-rule is not a rule',
      'b-rule: an exemption must say why',
    ]);
  });

  it('finds unknown ids and numbered citations, and accepts known ids', () => {
    const known = new Set(['create-adopts', 'typed-errors']);
    expect(badCitations('adopts it (rule create-adopts)', known)).toEqual([]);
    expect(badCitations('(rules create-adopts and typed-errors)', known)).toEqual([]);
    expect(badCitations('(rules create-adopts, no-such-rule)', known)).toEqual(['unknown rule no-such-rule']);
    expect(badCitations('never zero (contract rule 1)', known)).toEqual(['contract rule 1']);
    expect(badCitations('lint rule `import-boundaries`', known)).toEqual([]);
  });
});
