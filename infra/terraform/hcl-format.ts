/**
 * The layout rules of `terraform fmt` (hclwrite's formatIndent and formatCells), without a terraform
 * binary: two spaces per bracket-opening line, and the `=` of consecutive one-line attributes aligned.
 * Spacing inside expressions is not normalised; files are expected to write it the usual way.
 */

/** A line split at its attribute `=` when the value is complete on the line. */
interface Line {
  text: string;
  /** Net opening minus closing brackets outside strings and comments. */
  brackets: number;
  /** Index of the attribute `=` when the line is a one-line attribute (hclwrite's "assign" cell). */
  assignAt?: number;
  /** Verbatim: inside a heredoc. */
  verbatim: boolean;
}

const OPEN = new Set(['{', '[', '(']);
const CLOSE = new Set(['}', ']', ')']);

/** Scans one line of HCL; `heredoc` is the marker of a heredoc the line opens, if any. */
function scan(text: string): { brackets: number; assignAt?: number; heredoc?: string } {
  // Stack of modes: 'expr' (code) or 'str' (a quoted template); a template interpolation pushes 'expr'.
  const modes: ('expr' | 'str' | 'interp')[] = ['expr'];
  let brackets = 0;
  let firstEquals: number | undefined;
  let bracketsAtEquals = 0;
  let heredoc: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] ?? '';
    const next = text[i + 1] ?? '';
    const mode = modes[modes.length - 1];
    if (mode === 'str') {
      if (c === '\\') i++;
      else if (c === '"') modes.pop();
      else if ((c === '$' || c === '%') && next === '{') {
        modes.push('interp');
        i++;
      }
      continue;
    }
    if (c === '#' || (c === '/' && next === '/')) break;
    if (c === '"') modes.push('str');
    else if (c === '<' && next === '<') {
      const match = /^<<-?([A-Za-z_][A-Za-z0-9_]*)\s*$/.exec(text.slice(i));
      if (match) {
        heredoc = match[1];
        break;
      }
    } else if (OPEN.has(c)) brackets++;
    else if (c === '}' && mode === 'interp') modes.pop();
    else if (CLOSE.has(c)) brackets--;
    else if (c === '=' && firstEquals === undefined && modes.length === 1) {
      const prev = text[i - 1] ?? '';
      const isOperator = next === '=' || next === '>' || '=!<>'.includes(prev);
      if (!isOperator && text.slice(0, i).trim() !== '') {
        firstEquals = i;
        bracketsAtEquals = brackets;
      }
    }
  }
  const result: { brackets: number; assignAt?: number; heredoc?: string } = { brackets };
  // Only a value complete on this line is aligned (hclwrite counts brackets from the `=` on).
  if (firstEquals !== undefined && brackets - bracketsAtEquals === 0) result.assignAt = firstEquals;
  if (heredoc !== undefined) result.heredoc = heredoc;
  return result;
}

function splitLines(source: string): Line[] {
  const lines: Line[] = [];
  let heredoc: string | undefined;
  for (const raw of source.replace(/\n$/, '').split('\n')) {
    if (heredoc !== undefined) {
      lines.push({ text: raw, brackets: 0, verbatim: true });
      if (raw.trim() === heredoc) heredoc = undefined;
      continue;
    }
    const text = raw.trim();
    const scanned = scan(text);
    heredoc = scanned.heredoc;
    const line: Line = { text, brackets: scanned.brackets, verbatim: false };
    if (scanned.assignAt !== undefined) line.assignAt = scanned.assignAt;
    lines.push(line);
  }
  return lines;
}

/**
 * Lays HCL out as `terraform fmt` does (indentation and `=` alignment).
 *
 * @param source - the text of a .tf file
 * @returns the text with each line re-indented, `=` aligned, trailing spaces removed, one final newline
 * @example formatHcl('a {\nx = 1\nlong = 2\n}\n') // 'a {\n  x    = 1\n  long = 2\n}\n'
 */
export function formatHcl(source: string): string {
  const lines = splitLines(source);
  // Indentation: hclwrite keeps a stack of how many brackets each opening line opened.
  const indents: number[] = [];
  const indentOf: number[] = [];
  for (const line of lines) {
    if (line.verbatim || line.text === '') {
      indentOf.push(0);
      continue;
    }
    if (line.brackets > 0) {
      indentOf.push(indents.length);
      indents.push(line.brackets);
    } else if (line.brackets < 0) {
      let closed = -line.brackets;
      while (closed > 0 && indents.length > 0) {
        const top = indents[indents.length - 1] ?? 0;
        if (closed >= top) {
          closed -= top;
          indents.pop();
        } else {
          indents[indents.length - 1] = top - closed;
          closed = 0;
        }
      }
      indentOf.push(indents.length);
    } else {
      indentOf.push(indents.length);
    }
  }
  // Alignment: a chain of consecutive one-line attributes puts its `=` one column past the longest name.
  const out: string[] = [];
  for (let i = 0; i < lines.length;) {
    const line = lines[i];
    if (!line || line.verbatim || line.assignAt === undefined) {
      out.push(line?.verbatim ? line.text : line?.text ? `${'  '.repeat(indentOf[i] ?? 0)}${line.text}` : '');
      i++;
      continue;
    }
    let end = i;
    while (lines[end]?.assignAt !== undefined && !lines[end]?.verbatim) end++;
    const chain = lines.slice(i, end);
    const width = Math.max(...chain.map((l) => l.text.slice(0, l.assignAt).trimEnd().length));
    chain.forEach((l, k) => {
      const name = l.text.slice(0, l.assignAt).trimEnd();
      const value = l.text.slice((l.assignAt ?? 0) + 1).trim();
      out.push(`${'  '.repeat(indentOf[i + k] ?? 0)}${name.padEnd(width)} = ${value}`.trimEnd());
    });
    i = end;
  }
  return `${out.join('\n')}\n`;
}
