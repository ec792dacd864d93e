/**
 * Reads a Terraform directory without terraform: every .tf through HashiCorp's HCL parser (compiled to
 * WebAssembly, @cdktn/hcl2json) and every .tf.json as JSON, merged into one document, plus a check
 * that every reference names something declared.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { getReferencesInExpression, parse } from '@cdktn/hcl2json';

/** A block body as hcl2json gives it: nested blocks are arrays of bodies. */
export type Body = Record<string, unknown>;

/** The merged configuration of a directory. */
export interface TerraformDir {
  /** File name → its parsed content (hcl2json's shape for .tf, plain JSON for .tf.json). */
  files: Map<string, Body>;
  variables: Set<string>;
  locals: Set<string>;
  /** `type.name` of each resource. */
  resources: Map<string, Body>;
  /** `type.name` of each data source. */
  data: Set<string>;
  outputs: Set<string>;
}

const isObject = (v: unknown): v is Body => typeof v === 'object' && v !== null && !Array.isArray(v);

/** hcl2json wraps every block body in an array; .tf.json may or may not. */
export function bodies(value: unknown): Body[] {
  if (Array.isArray(value)) return value.filter(isObject);
  return isObject(value) ? [value] : [];
}

/**
 * The `type "name" { … }` blocks of a file's `resource` or `data` key, in either syntax.
 *
 * @returns `[type, name, body]` for each
 */
export function labelledBlocks(value: unknown): [string, string, Body][] {
  const out: [string, string, Body][] = [];
  for (const group of bodies(value)) {
    for (const [type, named] of Object.entries(group)) {
      for (const n of bodies(named)) {
        for (const [name, body] of Object.entries(n)) for (const b of bodies(body)) out.push([type, name, b]);
      }
    }
  }
  return out;
}

/**
 * Parses every .tf and .tf.json file of `dir`.
 *
 * @throws Error naming the file and position of a syntax error
 */
export async function readTerraformDir(dir: string): Promise<TerraformDir> {
  const result: TerraformDir = {
    files: new Map(),
    variables: new Set(),
    locals: new Set(),
    resources: new Map(),
    data: new Set(),
    outputs: new Set(),
  };
  const names = readdirSync(dir)
    .filter((f) => f.endsWith('.tf') || f.endsWith('.tf.json'))
    .sort();
  for (const name of names) {
    const text = readFileSync(join(dir, name), 'utf8');
    const decoded: unknown = name.endsWith('.tf.json') ? JSON.parse(text) : await parse(name, text);
    if (!isObject(decoded)) throw new Error(`${name}: not a Terraform configuration object`);
    const body = decoded;
    result.files.set(name, body);
    for (const v of bodies(body['variable'])) for (const key of Object.keys(v)) result.variables.add(key);
    for (const l of bodies(body['locals'])) for (const key of Object.keys(l)) result.locals.add(key);
    for (const o of bodies(body['output'])) for (const key of Object.keys(o)) result.outputs.add(key);
    for (const group of bodies(body['resource'])) {
      for (const [type, named] of Object.entries(group)) {
        for (const n of bodies(named)) {
          for (const [label, resource] of Object.entries(n)) {
            const first = bodies(resource)[0];
            if (first) result.resources.set(`${type}.${label}`, first);
          }
        }
      }
    }
    for (const group of bodies(body['data'])) {
      for (const [type, named] of Object.entries(group)) {
        for (const n of bodies(named)) for (const label of Object.keys(n)) result.data.add(`${type}.${label}`);
      }
    }
  }
  return result;
}

/** Every string in a parsed body, with the names of the dynamic blocks (their iterators) around it. */
function collectStrings(value: unknown, out: string[], iterators: Set<string>): void {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const v of value) collectStrings(v, out, iterators);
  else if (isObject(value)) {
    for (const [key, v] of Object.entries(value)) {
      if (key === 'dynamic') for (const d of bodies(v)) for (const name of Object.keys(d)) iterators.add(name);
      collectStrings(v, out, iterators);
    }
  }
}

/**
 * A string value as an HCL quoted template: quotes and backslashes outside `${…}` escaped,
 * interpolations kept as written (they may span lines and hold strings of their own).
 */
function asTemplate(value: string): string {
  let out = '';
  let depth = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value[i] ?? '';
    if (depth === 0 && c === '$' && value[i + 1] === '{') {
      depth = 1;
      out += '${';
      i++;
    } else if (depth > 0) {
      if (c === '{') depth++;
      else if (c === '}') depth--;
      out += c;
    } else out += c === '"' || c === '\\' ? `\\${c}` : c;
  }
  return `"${out}"`;
}

/** Names that are not declarations: meta-arguments and built-in objects. */
const BUILT_IN = new Set(['each', 'count', 'path', 'self', 'terraform']);

/**
 * The references (`var.x`, `local.y`, `google_z.n[...]…`) in the expressions of a parsed value, as
 * HashiCorp's parser finds them, with the iterators of dynamic blocks inside it.
 *
 * @param file - its name: `.tf.json` files also give depends_on entries as bare addresses
 */
export async function referencesIn(
  file: string,
  value: unknown,
): Promise<{ references: string[]; iterators: Set<string> }> {
  const strings: string[] = [];
  const iterators = new Set<string>();
  collectStrings(value, strings, iterators);
  const references: string[] = [];
  for (const s of strings) {
    if (s.includes('${')) {
      for (const r of await getReferencesInExpression(file, asTemplate(s))) references.push(r.value);
    } else if (/^(data\.)?[a-z][a-z0-9]*_[a-z0-9_]+\.[A-Za-z_][\w-]*$/.test(s) && file.endsWith('.tf.json')) {
      // depends_on entries in JSON syntax are bare addresses.
      references.push(s);
    }
  }
  return { references, iterators };
}

/**
 * The references in `dir` that name nothing declared there, and the variables nothing uses.
 *
 * @returns messages like `functions.tf: var.projet is not declared`; empty when all is well
 */
export async function unresolvedReferences(tf: TerraformDir): Promise<string[]> {
  const problems: string[] = [];
  const usedVariables = new Set<string>();
  for (const [file, body] of tf.files) {
    const { references, iterators } = await referencesIn(file, body);
    for (const ref of references) {
      const parts = ref.split('.').map((p) => p.replace(/^"|"$/g, ''));
      const [head = '', second = '', third = ''] = parts;
      if (BUILT_IN.has(head) || iterators.has(head)) continue;
      if (head === 'var') {
        usedVariables.add(second);
        if (!tf.variables.has(second)) problems.push(`${file}: var.${second} is not declared`);
      } else if (head === 'local') {
        if (!tf.locals.has(second)) problems.push(`${file}: local.${second} is not declared`);
      } else if (head === 'data') {
        if (!tf.data.has(`${second}.${third}`)) problems.push(`${file}: data.${second}.${third} is not declared`);
      } else if (/^[a-z][a-z0-9]*_[a-z0-9_]+$/.test(head)) {
        if (!tf.resources.has(`${head}.${second}`)) problems.push(`${file}: ${head}.${second} is not declared`);
      }
    }
  }
  for (const v of tf.variables) if (!usedVariables.has(v)) problems.push(`variable "${v}" is never used`);
  return problems;
}
