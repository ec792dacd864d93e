/** Firestore's index rules (firestore-indexes.ts) and the indexes firestore.tf declares. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { findTopologyFile } from '../local/topology.js';
import {
  checkIndexes,
  declaredIndexes,
  indexNeed,
  queryShape,
  refusedIndexes,
  type QueryShape,
} from './firestore-indexes.js';
import { readTerraformDir, type Body, type TerraformDir } from './hcl-files.js';

const dir = join(dirname(dirname(findTopologyFile())), 'infra', 'terraform');

const field = (fieldPath: string, op: string) => ({ fieldFilter: { field: { fieldPath }, op } });
const and = (...filters: unknown[]) => ({ compositeFilter: { op: 'AND', filters } });
const from = [{ collectionId: 'proxies' }];

/** Wire-form queries as `Query.toProto()` writes them, and how Firestore serves each. */
const CASES: { name: string; query: unknown; need: ReturnType<typeof indexNeed> }[] = [
  { name: 'order by the name only', query: { from, orderBy: [{ field: { fieldPath: '__name__' } }] }, need: 'none' },
  {
    name: 'every document under a parent, by name (a recursive delete)',
    query: { from: [{ allDescendants: true }], where: field('__name__', 'GREATER_THAN_OR_EQUAL') },
    need: 'none',
  },
  { name: 'one equality', query: { from, where: field('status.phase', 'EQUAL') }, need: 'single-field' },
  {
    name: 'a range on one field and on the name (the changes query)',
    query: {
      from,
      where: and(
        field('__name__', 'GREATER_THAN'),
        field('__name__', 'LESS_THAN_OR_EQUAL'),
        field('changedAt', 'GREATER_THAN_OR_EQUAL'),
      ),
    },
    need: 'single-field',
  },
  {
    name: 'two equalities (index merging)',
    query: { from, where: and(field('spec.provider', 'EQUAL'), field('status.phase', 'EQUAL')) },
    need: 'merge',
  },
  {
    name: 'an equality and a range',
    query: { from, where: and(field('spec.provider', 'EQUAL'), field('changedAt', 'GREATER_THAN')) },
    need: 'composite',
  },
  {
    name: 'an equality and an order on another field',
    query: {
      from,
      where: field('spec.provider', 'EQUAL'),
      orderBy: [{ field: { fieldPath: 'at' }, direction: 'DESCENDING' }],
    },
    need: 'composite',
  },
];

/** The resources of an HCL snippet, read as readTerraformDir reads a directory. */
const resourcesOf = async (hcl: string): Promise<Map<string, Body>> => {
  const snippetDir = mkdtempSync(join(tmpdir(), 'firestore-indexes-'));
  writeFileSync(join(snippetDir, 'snippet.tf'), hcl);
  try {
    return (await readTerraformDir(snippetDir)).resources;
  } finally {
    rmSync(snippetDir, { recursive: true });
  }
};

const index = (name: string, fields: string[]) =>
  [
    `resource "google_firestore_index" "${name}" {`,
    '  collection = "proxies"',
    ...fields.map((f) => `  fields {\n    field_path = "${f}"\n    order = "ASCENDING"\n  }`),
    '}',
  ].join('\n');

let tf: TerraformDir;
beforeAll(async () => {
  tf = await readTerraformDir(dir);
}, 30_000);

describe('terraform schema: Firestore index rules', () => {
  it.each(CASES)('$name: $need', ({ query, need }) => {
    expect(indexNeed(queryShape(query, 'case'))).toBe(need);
  });

  it('refuses a composite index of one field and __name__ (the 400 of a real apply)', async () => {
    const resources = await resourcesOf(index('changed_at', ['changedAt', '__name__']));
    expect(refusedIndexes(declaredIndexes(resources).indexes)).toEqual([
      expect.stringContaining('google_firestore_index.changed_at: one field and __name__'),
    ]);
  });

  it('finds a missing composite, an unused one and a query on an exempted field', async () => {
    const queries: QueryShape[] = CASES.map((c) => queryShape(c.query, c.name));
    const resources = await resourcesOf(
      [
        index('unused', ['spec.provider', 'spec.pool']),
        'resource "google_firestore_field" "phase" {\n  collection = "proxies"\n  field = "status.phase"\n  index_config {}\n}',
      ].join('\n'),
    );
    const findings = checkIndexes(queries, resources);
    expect(findings).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^an equality and a range .*needs a composite index \(spec\.provider ASCENDING, changedAt ASCENDING\)/,
        ),
        expect.stringMatching(
          /^an equality and an order on another field .*\(spec\.provider ASCENDING, at DESCENDING\)/,
        ),
        'google_firestore_index.unused: no query of the store uses it',
        expect.stringMatching(/^one equality .*removes$/),
      ]),
    );
  });

  it('firestore.tf declares no index Firestore refuses', () => {
    expect(refusedIndexes(declaredIndexes(tf.resources).indexes)).toEqual([]);
  });
});
