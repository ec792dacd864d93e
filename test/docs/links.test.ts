/** Every relative link and anchor in docs/ and README.md resolves. */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anchors, links, slug } from './markdown.js';

const root = resolve(import.meta.dirname, '..', '..');

function markdownFiles(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
      d.isDirectory() ? walk(join(dir, d.name)) : d.name.endsWith('.md') ? [join(dir, d.name)] : [],
    );
  return [join(root, 'README.md'), ...walk(join(root, 'docs'))];
}

/** Problems with one file's links, as `file:line: target: why`. */
export function brokenLinks(file: string, text: string): string[] {
  const problems: string[] = [];
  for (const { target, line } of links(text)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
    const [path = '', anchor] = target.split('#');
    const where = `${relative(root, file)}:${line}: ${target}`;
    if (path === '') {
      if (!anchors(text).has(anchor ?? '')) problems.push(`${where}: no heading #${anchor}`);
      continue;
    }
    const resolved = resolve(dirname(file), decodeURIComponent(path));
    const rel = relative(root, resolved);
    if (!existsSync(resolved)) {
      problems.push(`${where}: ${rel} does not exist`);
      continue;
    }
    if (anchor !== undefined && statSync(resolved).isFile() && resolved.endsWith('.md')) {
      if (!anchors(readFileSync(resolved, 'utf8')).has(anchor)) problems.push(`${where}: no heading #${anchor}`);
    }
  }
  return problems;
}

describe('links in docs/ and README.md', () => {
  const files = markdownFiles();

  it('finds the documents and their links', () => {
    expect(files.map((f) => relative(root, f))).toEqual(
      expect.arrayContaining(['README.md', 'docs/architecture.md', 'docs/providers.md', 'docs/deploy.md']),
    );
    expect(files.flatMap((f) => links(readFileSync(f, 'utf8'))).length).toBeGreaterThan(20);
  });

  it.each(files.map((f) => [relative(root, f), f]))('%s: every relative link and anchor resolves', (_name, file) => {
    expect(brokenLinks(file, readFileSync(file, 'utf8'))).toEqual([]);
  });

  it('reports a missing file, a missing anchor, and ignores links inside code', () => {
    const file = join(root, 'docs', 'example.md');
    const text = [
      '# Title',
      '[ok](#title) [bad anchor](#nope) [missing](missing.md) [arch](architecture.md#not-there)',
      '`[in code](missing-too.md)`',
      '```',
      '[in a block](missing-three.md)',
      '```',
      '[web](https://example.com/x.md)',
    ].join('\n');
    expect(brokenLinks(file, text).map((p) => p.replace(/^[^ ]+ /, ''))).toEqual([
      '#nope: no heading #nope',
      'missing.md: docs/missing.md does not exist',
      'architecture.md#not-there: no heading #not-there',
    ]);
  });

  it('makes anchors as GitHub does', () => {
    expect(slug('Departures from the brief')).toBe('departures-from-the-brief');
    expect(slug('`kvm` (pending): libvirt on the relay')).toBe('kvm-pending-libvirt-on-the-relay');
    expect([...anchors('# A\n## A\n```\n# not a heading\n```\n')]).toEqual(['a', 'a-1']);
  });
});
