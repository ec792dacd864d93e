/** Every `path#name` citation in the docs names a file that defines `name` (a function, class, constant, type or method). */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { codeSpans, proseLines } from './markdown.js';

const root = resolve(import.meta.dirname, '..', '..');
const CITATION = /^([\w./-]+\.(?:ts|mjs|js|tf|sh|yaml))#([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)?)$/;
const escape = (s: string) => s.replace(/[$]/g, '\\$');

/** Why `name` is not found in `source`, or undefined when it is defined there. */
export function missingDefinition(source: string, name: string): string | undefined {
  const [owner = '', member] = name.split('.');
  const declares = (n: string) =>
    new RegExp(
      `(?:^|\\s)(?:function\\*?|class|const|let|interface|type|enum)\\s+${escape(n)}\\b|^\\s*(?:(?:public|private|protected|static|readonly|async|get|set)\\s+)*${escape(n)}\\s*[(<:=?]|^\\s*(?:resource|variable|output|data)\\s+"[^"]*"\\s*"?${escape(n)}"?|^\\s*${escape(n)}\\s*=|^${escape(n)}\\s*\\(\\)`,
      'm',
    );
  if (!declares(owner).test(source)) return `${owner} is not defined`;
  if (member === undefined) return undefined;
  const start = source.search(new RegExp(`(?:class|interface)\\s+${escape(owner)}\\b`));
  if (start < 0) return `${owner} is not a class or interface`;
  return declares(member).test(source.slice(start)) ? undefined : `${owner} has no member ${member}`;
}

function citations(file: string): { path: string; name: string; line: number }[] {
  return codeSpans(readFileSync(join(root, file), 'utf8')).flatMap(({ text, line }) => {
    const m = CITATION.exec(text);
    return m?.[1] && m[2] ? [{ path: m[1], name: m[2], line }] : [];
  });
}

const DOCS = ['docs/providers.md', 'docs/architecture.md', 'docs/deploy.md', 'docs/operations.md'];

describe('code citations (`path#name`) in the docs', () => {
  it.each(DOCS)('%s: every cited name is defined in the cited file', (doc) => {
    const problems = citations(doc).flatMap(({ path, name, line }) => {
      if (!existsSync(join(root, path))) return [`${doc}:${line}: ${path} does not exist`];
      const why = missingDefinition(readFileSync(join(root, path), 'utf8'), name);
      return why ? [`${doc}:${line}: ${path}#${name}: ${why}`] : [];
    });
    expect(problems).toEqual([]);
  });

  it('docs/providers.md cites code for every rule of its rule table', () => {
    const lines = proseLines(readFileSync(join(root, 'docs', 'providers.md'), 'utf8'));
    const start = lines.findIndex((l) => /^## Rules/.test(l));
    const end = lines.findIndex((l, i) => i > start && /^## /.test(l));
    const rows = lines.slice(start, end).filter((l) => /^\|\s*\d+\s*\|/.test(l));
    expect(rows.length).toBeGreaterThanOrEqual(15);
    for (const row of rows) {
      const cited = [...row.matchAll(/`([^`]+)`/g)].some((m) => CITATION.test(m[1] ?? ''));
      expect(cited, row.slice(0, 80)).toBe(true);
      expect(row, row.slice(0, 80)).toMatch(/\|\s*(MUST|SHOULD)\b/);
    }
    expect(citations('docs/providers.md').length).toBeGreaterThan(40);
  });

  it('finds functions, classes, methods and Terraform blocks, and misses what is not there', () => {
    const src =
      'export function decide(x) {}\nexport class FirestoreProxyRepository {\n  async rolloutCounts(p: string) {}\n}\n';
    expect(missingDefinition(src, 'decide')).toBeUndefined();
    expect(missingDefinition(src, 'FirestoreProxyRepository.rolloutCounts')).toBeUndefined();
    expect(missingDefinition(src, 'decideNothing')).toBe('decideNothing is not defined');
    expect(missingDefinition(src, 'FirestoreProxyRepository.nothing')).toBe(
      'FirestoreProxyRepository has no member nothing',
    );
    expect(missingDefinition('resource "google_x" "proxy" {\n}\n', 'proxy')).toBeUndefined();
  });
});
