/** Markdown as the docs checks read it: headings to GitHub anchors, links and code spans outside code blocks. */

/** Text outside fenced code blocks, line by line (fenced lines become empty, so line numbers hold). */
export function proseLines(markdown: string): string[] {
  let fenced = false;
  return markdown.split('\n').map((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      return '';
    }
    return fenced ? '' : line;
  });
}

/** GitHub's anchor for a heading text: lowercase, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a document's headings; a repeated heading gets `-1`, `-2`, … as on GitHub. */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of proseLines(markdown)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Inline links `[text](target)` outside code, with their line numbers (1-based). */
export function links(markdown: string): { target: string; line: number }[] {
  const found: { target: string; line: number }[] = [];
  proseLines(markdown).forEach((line, i) => {
    const withoutCode = line.replace(/`[^`]*`/g, '');
    for (const m of withoutCode.matchAll(/\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      if (m[1]) found.push({ target: m[1], line: i + 1 });
    }
  });
  return found;
}

/** Code spans outside code blocks, with their line numbers. */
export function codeSpans(markdown: string): { text: string; line: number }[] {
  const found: { text: string; line: number }[] = [];
  proseLines(markdown).forEach((line, i) => {
    for (const m of line.matchAll(/`([^`]+)`/g)) if (m[1]) found.push({ text: m[1], line: i + 1 });
  });
  return found;
}
