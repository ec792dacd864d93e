/**
 * Which Firestore indexes the store's queries need, by Firestore's documented rules, checked both ways
 * against the `google_firestore_index` and `google_firestore_field` resources of infra/terraform.
 *
 * The rules (https://firebase.google.com/docs/firestore/query-data/index-overview and
 * https://firebase.google.com/docs/firestore/query-data/indexing):
 * - Firestore keeps a single-field index, ascending and descending, of every field automatically; it
 *   serves equality, range and orderBy on that one field. Every index ends with the document name
 *   (`__name__`), so a filter or order on the name beside one field is served by that field's index
 *   (Admin API, `Index.fields`: "The last field entry is always for the field path __name__";
 *   https://cloud.google.com/firestore/docs/reference/rest/v1/projects.databases.collectionGroups.indexes).
 *   Hence a composite index of one field plus `__name__` is refused on create with 400 "this index is
 *   not necessary, configure using single field index controls".
 * - Equality filters on several fields, with no other order, are served by merging single-field
 *   indexes ("index merging"); a composite index over them is optional and, when it exists, is read
 *   as one range instead of a merge join.
 * - Anything else on two or more fields (equality plus range or order, ranges on two fields, orders
 *   on two fields) needs a composite index: the equality fields first, then the range/order fields.
 * - A single-field exemption (`google_firestore_field` with an empty `index_config`) removes the
 *   automatic index: no query may then rely on it.
 */
import { z } from 'zod';
import type { Body } from './hcl-files.js';

/** What of a query decides its index: the collection and the fields by their role. */
export interface QueryShape {
  /** The collection id; `*` for a query over every collection (recursive deletes), which only the name index serves. */
  collection: string;
  /** `COLLECTION_GROUP` when the query reaches every collection of that id (`allDescendants`). */
  scope: 'COLLECTION' | 'COLLECTION_GROUP';
  /** Fields with `==` (or `in`, `array-contains`, null/NaN tests): any order. */
  equalities: string[];
  /** Fields with a range or `!=`, in the order of the orderBy the query (or the SDK) gives them. */
  orders: { field: string; direction: 'ASCENDING' | 'DESCENDING' }[];
  /** Where the query comes from, for messages. */
  source: string;
}

/** A declared composite index. */
export interface DeclaredIndex {
  address: string;
  collection: string;
  scope: 'COLLECTION' | 'COLLECTION_GROUP';
  fields: { field: string; direction: 'ASCENDING' | 'DESCENDING' }[];
}

const NAME = '__name__';
const EQUALITY_OPS = new Set(['EQUAL', 'IN', 'ARRAY_CONTAINS', 'ARRAY_CONTAINS_ANY', 'IS_NULL', 'IS_NAN']);

const fieldRef = z.object({ fieldPath: z.string() });
type Filter = {
  fieldFilter?: { field: { fieldPath: string }; op: string } | undefined;
  unaryFilter?: { field: { fieldPath: string }; op: string } | undefined;
  compositeFilter?: { filters: Filter[] } | undefined;
};
const filterSchema: z.ZodType<Filter> = z.lazy(() =>
  z.object({
    fieldFilter: z.object({ field: fieldRef, op: z.string() }).optional(),
    unaryFilter: z.object({ field: fieldRef, op: z.string() }).optional(),
    compositeFilter: z.object({ filters: z.array(filterSchema) }).optional(),
  }),
);
const structuredQuerySchema = z.object({
  from: z.array(z.object({ collectionId: z.string().optional(), allDescendants: z.boolean().optional() })).length(1),
  where: filterSchema.optional(),
  orderBy: z.array(z.object({ field: fieldRef, direction: z.enum(['ASCENDING', 'DESCENDING']).optional() })).optional(),
});

function leafFilters(filter: Filter | undefined): { field: string; op: string }[] {
  if (!filter) return [];
  if (filter.compositeFilter) return filter.compositeFilter.filters.flatMap(leafFilters);
  const leaf = filter.fieldFilter ?? filter.unaryFilter;
  return leaf ? [{ field: leaf.field.fieldPath, op: leaf.op }] : [];
}

/**
 * The shape of a query from its wire form (`Query.toProto().structuredQuery`).
 *
 * @param source - where it was issued, named in findings
 */
export function queryShape(structuredQuery: unknown, source: string): QueryShape {
  const q = structuredQuerySchema.parse(structuredQuery);
  const leaves = leafFilters(q.where);
  const equalities = [...new Set(leaves.filter((l) => EQUALITY_OPS.has(l.op)).map((l) => l.field))];
  const orders = (q.orderBy ?? []).map((o) => ({ field: o.field.fieldPath, direction: o.direction ?? 'ASCENDING' }));
  // A range field the query does not order by is ordered ascending first (the SDK's implicit order).
  for (const l of leaves) {
    if (!EQUALITY_OPS.has(l.op) && !orders.some((o) => o.field === l.field)) {
      orders.unshift({ field: l.field, direction: 'ASCENDING' });
    }
  }
  const from = q.from[0];
  return {
    collection: from?.collectionId ?? '*',
    scope: from?.allDescendants ? 'COLLECTION_GROUP' : 'COLLECTION',
    equalities,
    orders,
    source,
  };
}

/** The fields of a query other than the document name, which every index ends with. */
function fieldsOf(q: QueryShape): Set<string> {
  return new Set([...q.equalities, ...q.orders.map((o) => o.field)].filter((f) => f !== NAME));
}

/** How a query is served: by the automatic single-field indexes, by merging them, or by a composite. */
export function indexNeed(q: QueryShape): 'none' | 'single-field' | 'merge' | 'composite' {
  const fields = fieldsOf(q);
  if (fields.size === 0) return 'none';
  if (fields.size === 1) return 'single-field';
  if (q.orders.every((o) => o.field === NAME)) return 'merge';
  return 'composite';
}

/** Whether a declared composite index serves a query: equality fields first (any order), then the orders. */
export function serves(index: DeclaredIndex, q: QueryShape): boolean {
  if (index.collection !== q.collection || index.scope !== q.scope) return false;
  const fields = index.fields.filter((f) => f.field !== NAME);
  const eq = new Set(q.equalities.filter((f) => f !== NAME));
  const head = fields.slice(0, eq.size);
  if (!head.every((f) => eq.has(f.field))) return false;
  const tail = fields.slice(eq.size);
  const orders = q.orders.filter((o) => o.field !== NAME);
  return (
    tail.length === orders.length &&
    tail.every((f, i) => f.field === orders[i]?.field && f.direction === orders[i]?.direction)
  );
}

const indexBody = z.object({
  collection: z.string(),
  query_scope: z.enum(['COLLECTION', 'COLLECTION_GROUP']).optional(),
  fields: z.array(z.object({ field_path: z.string(), order: z.enum(['ASCENDING', 'DESCENDING']) })),
});
const fieldBody = z.object({
  collection: z.string(),
  field: z.string(),
  index_config: z.array(z.object({ indexes: z.array(z.unknown()).optional() })).optional(),
});

/** The composite indexes and the single-field exemptions declared among `resources` (`type.name` → body). */
export function declaredIndexes(resources: Map<string, Body>): {
  indexes: DeclaredIndex[];
  exempt: { address: string; collection: string; field: string }[];
} {
  const indexes: DeclaredIndex[] = [];
  const exempt: { address: string; collection: string; field: string }[] = [];
  for (const [address, body] of resources) {
    if (address.startsWith('google_firestore_index.')) {
      const b = indexBody.parse(body);
      indexes.push({
        address,
        collection: b.collection,
        scope: b.query_scope ?? 'COLLECTION',
        fields: b.fields.map((f) => ({ field: f.field_path, direction: f.order })),
      });
    } else if (address.startsWith('google_firestore_field.')) {
      const b = fieldBody.parse(body);
      // An index_config with no indexes removes the field's automatic indexes.
      const config = b.index_config?.[0];
      if (config && (config.indexes ?? []).length === 0)
        exempt.push({ address, collection: b.collection, field: b.field });
    }
  }
  return { indexes, exempt };
}

/** Declared indexes Firestore refuses whatever the queries: one field (plus the name) is a single-field index. */
export function refusedIndexes(indexes: DeclaredIndex[]): string[] {
  return indexes
    .filter((i) => i.fields.filter((f) => f.field !== NAME).length < 2)
    .map(
      (i) =>
        `${i.address}: one field and __name__ is the automatic single-field index; Firestore refuses it ("this index is not necessary, configure using single field index controls")`,
    );
}

/**
 * Every mismatch between the queries and the declared indexes, both ways.
 *
 * @returns findings naming the query's source or the resource; empty when the two agree
 */
export function checkIndexes(queries: QueryShape[], resources: Map<string, Body>): string[] {
  const { indexes, exempt } = declaredIndexes(resources);
  const findings = refusedIndexes(indexes);
  for (const q of queries) {
    const need = indexNeed(q);
    const label = `${q.source} (${q.collection}: ${[...fieldsOf(q)].join(', ')})`;
    if (need === 'composite' && !indexes.some((i) => serves(i, q))) {
      const wanted = [
        ...q.equalities.map((f) => `${f} ASCENDING`),
        ...q.orders.map((o) => `${o.field} ${o.direction}`),
      ];
      findings.push(`${label}: needs a composite index (${wanted.join(', ')}); none is declared`);
    }
    if (need === 'single-field') {
      const [field] = fieldsOf(q);
      const e = exempt.find((x) => x.collection === q.collection && x.field === field);
      if (e) findings.push(`${label}: relies on the single-field index of ${field}, which ${e.address} removes`);
    }
  }
  for (const i of indexes) {
    if (i.fields.filter((f) => f.field !== NAME).length < 2) continue; // already refused
    if (!queries.some((q) => serves(i, q))) findings.push(`${i.address}: no query of the store uses it`);
  }
  return findings;
}
