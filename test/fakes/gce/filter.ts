/**
 * The list `filter` grammar Compute accepts, as far as clients of this fake use it: AIP-160
 * comparisons (`=`, `!=`, `:`) or regular-expression ones (`eq`, `ne`, full match), one bare
 * expression or several parenthesised ones (an implicit AND); the two kinds cannot be mixed.
 */
import { ComputeError } from './errors.js';

interface Term {
  field: string;
  op: '=' | '!=' | ':' | 'eq' | 'ne';
  value: string;
}

const OPS: Term['op'][] = ['=', '!=', ':', 'eq', 'ne'];
const TERM = /^\s*([A-Za-z][\w.-]*)\s*(!=|=|:|\beq\b|\bne\b)\s*("(?:[^"\\]|\\.)*"|'[^']*'|[^\s()]+)\s*$/;

const invalid = (why: string) => new ComputeError(400, 'invalid', `Invalid list filter expression: ${why}`);

function parseTerm(text: string): Term {
  const m = TERM.exec(text);
  if (!m?.[1] || !m[2] || m[3] === undefined) throw invalid(`cannot parse "${text.trim()}"`);
  const raw = m[3];
  const value = raw.startsWith('"') || raw.startsWith("'") ? raw.slice(1, -1).replace(/\\(.)/g, '$1') : raw;
  const op = OPS.find((o) => o === m[2]);
  if (!op) throw invalid(`unknown operator "${m[2]}"`);
  return { field: m[1], op, value };
}

/**
 * Parses a filter into terms (all must match).
 *
 * @throws ComputeError 400 `invalid`, as Compute answers a filter it cannot read
 */
export function parseFilter(filter: string | undefined): Term[] {
  const text = (filter ?? '').trim();
  if (!text) return [];
  let terms: Term[];
  if (text.startsWith('(')) {
    terms = [];
    let rest = text;
    while (rest) {
      const m = /^\(([^()]*)\)\s*(?:AND\s+)?/.exec(rest);
      if (!m?.[1]) throw invalid(`unbalanced or empty parentheses near "${rest.slice(0, 30)}"`);
      terms.push(parseTerm(m[1]));
      rest = rest.slice(m[0].length).trim();
    }
  } else {
    terms = [parseTerm(text)];
  }
  const regex = terms.filter((t) => t.op === 'eq' || t.op === 'ne').length;
  if (regex > 0 && regex < terms.length) throw invalid('regular-expression and AIP-160 comparisons cannot be mixed');
  return terms;
}

function fieldValue(resource: Record<string, unknown>, field: string): string | undefined {
  let value: unknown = resource;
  for (const part of field.split('.')) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = Object.getOwnPropertyDescriptor(value, part)?.value as unknown;
  }
  if (value === undefined || value === null) return undefined;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** True when `resource` (its JSON form) satisfies every term. */
export function matches(resource: Record<string, unknown>, terms: Term[]): boolean {
  return terms.every((t) => {
    const v = fieldValue(resource, t.field);
    switch (t.op) {
      case '=':
        return v === t.value;
      case '!=':
        return v !== t.value;
      case ':':
        return t.value === '*' ? v !== undefined : (v ?? '').includes(t.value);
      case 'eq':
        return v !== undefined && new RegExp(`^(?:${t.value})$`).test(v);
      case 'ne':
        return v === undefined || !new RegExp(`^(?:${t.value})$`).test(v);
    }
  });
}
