/** Label selectors as the `labelSelector` query parameter spells them: equality- and set-based requirements. */
import { badRequest } from './status.js';

type Requirement = (labels: Record<string, string>) => boolean;

/** Splits on commas that are not inside `( … )`. */
function split(selector: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of selector) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else current += ch;
  }
  parts.push(current);
  return parts.map((p) => p.trim()).filter(Boolean);
}

const KEY = '[A-Za-z0-9][-A-Za-z0-9_./]*';
const VALUE = '[A-Za-z0-9]?[-A-Za-z0-9_.]*';

function requirement(text: string): Requirement {
  let m = new RegExp(`^(${KEY})\\s*(=|==|!=)\\s*(${VALUE})$`).exec(text);
  if (m) {
    const [, key = '', op, value = ''] = m;
    return op === '!=' ? (l) => l[key] !== value : (l) => l[key] === value;
  }
  m = new RegExp(`^(${KEY})\\s+(in|notin)\\s+\\(([^)]*)\\)$`).exec(text);
  if (m) {
    const [, key = '', op, list = ''] = m;
    const values = new Set(list.split(',').map((v) => v.trim()));
    return op === 'in'
      ? (l) => l[key] !== undefined && values.has(l[key])
      : (l) => l[key] === undefined || !values.has(l[key]);
  }
  m = new RegExp(`^(!?)(${KEY})$`).exec(text);
  if (m) {
    const [, not, key = ''] = m;
    return not ? (l) => l[key] === undefined : (l) => l[key] !== undefined;
  }
  throw badRequest(`unable to parse requirement: ${JSON.stringify(text)}`);
}

/**
 * @param selector - the raw query value (already URL-decoded); empty selects everything
 * @returns a predicate over an object's labels
 * @throws StatusError 400 for a requirement that does not parse
 */
export function parseSelector(selector: string | null): (labels: Record<string, string> | undefined) => boolean {
  const requirements = split(selector ?? '').map(requirement);
  return (labels) => requirements.every((r) => r(labels ?? {}));
}
