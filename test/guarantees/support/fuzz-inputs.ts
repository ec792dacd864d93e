/**
 * Seeded bad inputs for the fuzz suites: a valid object with one field broken at a time (wrong
 * type, huge, invalid name, unicode, injection, missing, an extra field) or its text broken
 * (truncated JSON, not an object), each with the field path its error must name.
 */
import { clip, showKey } from '../../../shared/domain/text.js';
import type { Rng } from './prng.js';

/** The kinds of damage, counted per surface in the figures. */
export const INPUT_CLASSES = [
  'wrong-type',
  'huge',
  'invalid-name',
  'unicode',
  'injection',
  'missing',
  'extra-field',
  'truncated',
  'not-object',
] as const;
export type InputClass = (typeof INPUT_CLASSES)[number];

/** A field of a surface's valid object, and what it accepts. */
export interface FieldSpec {
  /** Dotted path in the valid object (`spec.port`). */
  path: string;
  type: 'string' | 'number' | 'boolean' | 'object' | 'array';
  /** A name (proxy, provider, relay; a label value): takes invalid names, unicode and injections. */
  name?: boolean;
  /** A number with a range or integer constraint: out-of-range numbers are wrong too, not just other types. */
  bounded?: boolean;
  /** The longest string accepted (for `huge`). */
  max?: number;
  /** May be removed without error (skipped by `missing`). */
  optional?: boolean;
  /** Strings this field accepts: generated values that match are not bad, and are not used. */
  valid?: RegExp;
  /**
   * A record (labels, placement): bad keys go in as `{[bad]: value}`; keys matching `valid` are
   * accepted (without `valid`, any key up to `max` characters is).
   */
  keyedBy?: { max: number; value: unknown; valid?: RegExp };
  /** Only validated as text (free-form): unicode and injections are legal here, so not tried. */
  freeText?: boolean;
}

/** One bad input: the body (or raw text), and the field its error must name. */
export interface BadInput {
  class: InputClass;
  /** What was done, for failure messages (`spec.port = "80"`). */
  label: string;
  /** The JSON text to deliver. */
  text: string;
  /** The error's field must be this path, a parent of it, or inside it ('' = the whole input). */
  field: string;
  /** Text the error message must contain (the name of an extra field). */
  mentions?: string;
}

/** A DNS-1123 label, the names of proxies, providers and relays. */
export const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** A Kubernetes label key or value (without the prefix). */
export const LABEL_TEXT = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/** Names no DNS-1123 label may take. */
export const INVALID_NAMES = [
  '',
  'UPPER',
  'under_score',
  '-lead',
  'trail-',
  'dot.ted',
  'sp ace',
  'a'.repeat(64),
  'ümlaut',
  '\u0430pple',
  'nul\u0000byte',
  'new\nline',
  '../../etc/passwd',
  'a/b',
  '*',
  '%2e%2e',
];

/** Strings that would mean something to a shell, SQL, a template, HTML, a path, a log or a prototype. */
export const INJECTIONS = [
  "x'; DROP TABLE proxies;--",
  '$(rm -rf /)',
  '`id`',
  '{{7*7}}',
  '${process.env.HOME}',
  '<script>alert(1)</script>',
  '../../../../etc/shadow',
  '__proto__',
  'constructor.prototype',
  'a\r\n{"severity":"ERROR","message":"forged"}',
  '%s%s%s%n',
  'relays/other/instances/x',
  '\u202egnp.exe',
  'a\u200bb',
];

const UNICODE_RANGES: [number, number][] = [
  [0x00a0, 0x00ff],
  [0x0400, 0x04ff],
  [0x0600, 0x06ff],
  [0x4e00, 0x4fff],
  [0x1f600, 0x1f64f],
  [0x0300, 0x036f],
  [0x200b, 0x200f],
  [0xd800, 0xdbff],
];

/** A string of 1–12 characters with at least one outside ASCII (lone surrogates included). */
export function unicodeString(rng: Rng): string {
  const chars: string[] = [];
  const n = rng.int(1, 12);
  for (let i = 0; i < n; i++) {
    if (i > 0 && rng.chance(0.4)) chars.push(String.fromCharCode(rng.int(0x61, 0x7a)));
    else {
      const [lo, hi] = rng.pick(UNICODE_RANGES);
      chars.push(String.fromCodePoint(rng.int(lo, hi)));
    }
  }
  return chars.join('');
}

const WRONG_TYPED: Record<FieldSpec['type'], unknown[]> = {
  string: [42, -1, 3.5, true, null, [], ['x'], {}, { a: 'b' }],
  number: ['80', '', true, null, [], [1], {}, 1.5, -7, 1e20, Number.MAX_SAFE_INTEGER + 2],
  boolean: ['true', 1, 0, null, [], {}],
  object: ['x', 5, true, null, [], [{}]],
  array: ['x', 5, true, null, {}, { 0: 'a' }],
};

/** Numbers out of range are wrong only for a bounded number; other types always are. */
function wrongValue(rng: Rng, field: FieldSpec): unknown {
  const values = WRONG_TYPED[field.type].filter(
    (v) => field.bounded || typeof v !== 'number' || field.type !== 'number',
  );
  return rng.pick(values);
}

function clone<T>(value: T): T {
  return structuredClone(value);
}

/** The value at a dotted path. */
export function lookup(target: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((node, part) => (node as Record<string, unknown>)[part], target);
}

/** Sets (or, with `undefined`, removes) a dotted path; creates no parents. */
export function setPath(target: unknown, path: string, value: unknown): void {
  const parts = path.split('.');
  const last = parts.pop() ?? '';
  let node = target as Record<string, unknown>;
  for (const part of parts) node = node[part] as Record<string, unknown>;
  if (value === undefined) Reflect.deleteProperty(node, last);
  else node[last] = value;
}

/** The value to break `field` with, for a class; undefined when the class does not apply to it. */
function breakField(rng: Rng, cls: InputClass, field: FieldSpec): { value: unknown; label: string } | undefined {
  const show = (v: unknown) => {
    const text = JSON.stringify(v) ?? 'undefined';
    return text.length > 40 ? `${text.slice(0, 37)}…(${text.length})` : text;
  };
  const keyed = (key: string) => {
    const keys = field.keyedBy;
    if (!keys) return undefined;
    const accepted = key.length <= keys.max && (keys.valid ? keys.valid.test(key) : true);
    return accepted ? undefined : { value: { [key]: keys.value }, label: `key ${show(key)}` };
  };
  const named = (value: string) =>
    field.name && !field.valid?.test(value) ? { value, label: show(value) } : undefined;
  switch (cls) {
    case 'wrong-type': {
      const value = wrongValue(rng, field);
      return { value, label: show(value) };
    }
    case 'huge': {
      if (field.keyedBy && rng.chance(0.5)) return keyed('k'.repeat(rng.int(field.keyedBy.max + 1, 1_200_000)));
      if (field.type !== 'string' || field.max === undefined) return undefined;
      const value = 'x'.repeat(rng.int(field.max + 1, rng.chance(0.5) ? field.max * 4 : 1_200_000));
      return { value, label: `${value.length} characters` };
    }
    case 'invalid-name':
      if (field.keyedBy) return keyed(rng.pick(INVALID_NAMES.filter((n) => n !== '')));
      return named(rng.pick(INVALID_NAMES));
    case 'unicode': {
      const value = unicodeString(rng);
      return field.keyedBy ? keyed(value) : named(value);
    }
    case 'injection': {
      const value = rng.pick(INJECTIONS);
      return field.keyedBy ? keyed(value) : named(value);
    }
    case 'missing':
      return field.optional ? undefined : { value: undefined, label: 'removed' };
    default:
      return undefined;
  }
}

/**
 * `count` bad inputs derived from `valid`: field-level damage to one field of `fields` at a time,
 * extra fields on its objects, truncated text and non-object bodies, in proportions fixed by the seed.
 *
 * @param objects - paths of the objects that reject unknown keys ('' = the root); none: no extra fields
 */
export function badInputs(rng: Rng, valid: unknown, fields: FieldSpec[], objects: string[], count: number): BadInput[] {
  const out: BadInput[] = [];
  const fieldClasses: InputClass[] = ['wrong-type', 'huge', 'invalid-name', 'unicode', 'injection', 'missing'];
  while (out.length < count) {
    const roll = rng.next();
    if (roll < 0.1) {
      const text = JSON.stringify(valid);
      out.push({
        class: 'truncated',
        label: 'truncated JSON',
        text: text.slice(0, rng.int(0, text.length - 1)),
        field: '',
      });
      continue;
    }
    if (roll < 0.15) {
      const value = rng.pick([[], [valid], 'a string', 7, null, true]);
      out.push({
        class: 'not-object',
        label: JSON.stringify(value).slice(0, 40),
        text: JSON.stringify(value),
        field: '',
      });
      continue;
    }
    if (roll < 0.27 && objects.length > 0) {
      const at = rng.pick(objects);
      const key = rng.pick(['color', 'Spec', 'status', 'credentials', '__proto__', unicodeString(rng), 'password']);
      const body = clone(valid) as Record<string, unknown>;
      const target = at === '' ? body : (lookup(body, at) as Record<string, unknown>);
      Object.defineProperty(target, key, { value: { x: 1 }, enumerable: true, configurable: true, writable: true });
      out.push({
        class: 'extra-field',
        label: `${at || '(root)'}.${key}`,
        text: JSON.stringify(body),
        // Named by the key's own path, or by the object that rejects unknown keys.
        field: at === '' ? showKey(key) : `${at}.${showKey(key)}`,
        mentions: key,
      });
      continue;
    }
    const field = rng.pick(fields);
    const cls = rng.pick(fieldClasses);
    const broken = breakField(rng, cls, field);
    if (!broken) continue;
    const body = clone(valid);
    setPath(body, field.path, broken.value);
    out.push({ class: cls, label: `${field.path} = ${broken.label}`, text: JSON.stringify(body), field: field.path });
  }
  return out;
}

/**
 * Whether an error's field names the damaged one: the same path, a path inside it (a key of a
 * record), or a parent object that rejects an unknown key or a record that rejects a key.
 *
 * @param want - the damaged path as the surface spells it; '' when the whole input is damaged
 * @param whole - the fields that name the whole input on this surface (`(message)`, `config`)
 */
export function namesField(actual: string | undefined, want: string, whole: readonly string[]): boolean {
  if (actual === undefined || actual === '') return false;
  if (want === '') return whole.includes(actual);
  if (actual === want || actual.startsWith(`${want}.`) || want.startsWith(`${actual}.`)) return true;
  // An unknown key at the top level is reported against the whole input.
  return !want.includes('.') && whole.includes(actual);
}

/** Whether an error message mentions `text` (as written, as stored: cut and valid Unicode, or JSON-escaped). */
export function mentions(message: string, text: string): boolean {
  const shown = clip(text, 64).replace(/…$/, '');
  return [text, shown, JSON.stringify(text).slice(1, -1)].some((t) => message.includes(t));
}
