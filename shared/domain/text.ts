/** Untrusted text made safe to store and show: valid Unicode (no lone surrogates), bounded length; unsafe JSON found. */

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g');

/** True when `text` is valid Unicode: Firestore refuses to store a string with a lone surrogate. */
export function isWellFormed(text: string): boolean {
  return !LONE_SURROGATE.test(text);
}

/**
 * `text` with lone surrogates replaced by U+FFFD and cut to `max` characters (never inside a
 * surrogate pair), marked with `…` when cut.
 */
export function clip(text: string, max: number): string {
  const whole = text.replace(LONE_SURROGATES, '\uFFFD');
  if (whole.length <= max) return whole;
  const end = /[\uD800-\uDBFF]/.test(whole.charAt(max - 1)) ? max - 1 : max;
  return `${whole.slice(0, end)}…`;
}

/** A key as a field path shows it (a key can be anything a sender typed, a megabyte long). */
export function showKey(key: string): string {
  return clip(key, 64);
}

/**
 * What no handler or loader may be given, found anywhere in decoded JSON (or YAML): a string or key that is not valid
 * Unicode (a lone surrogate, written as a `\ud800` escape), which Firestore refuses to store (the
 * write would fail on every redelivery), and a key named `__proto__`, which schemas silently drop.
 * Walks without recursion, so JSON nested 100 000 deep is fine.
 *
 * @returns the first such place (its field path and the reason), or undefined
 */
export function unsafeJson(value: unknown): { field: string; reason: string } | undefined {
  const stack: [unknown, string][] = [[value, '']];
  const at = (path: string, key: string) => (path ? `${path}.${showKey(key)}` : showKey(key));
  for (let item = stack.pop(); item; item = stack.pop()) {
    const [node, path] = item;
    if (typeof node === 'string') {
      if (!isWellFormed(node)) return { field: path || '(message)', reason: 'is not valid Unicode (a lone surrogate)' };
      continue;
    }
    if (typeof node !== 'object' || node === null) continue;
    for (const [key, child] of Object.entries(node)) {
      if (key === '__proto__') return { field: at(path, key), reason: 'a key named __proto__ is not accepted' };
      if (!isWellFormed(key)) return { field: at(path, key), reason: 'key is not valid Unicode (a lone surrogate)' };
      stack.push([child, at(path, key)]);
    }
  }
  return undefined;
}
