/**
 * ASN lookup in a range file as `@ip-location-db/asn` ships it (`*-num.csv`: `start,end,asn,org`,
 * sorted by `start`, ranges not overlapping): a binary search over the file's bytes, so the file is
 * read once and never parsed whole.
 */
const NEWLINE = 0x0a;
const COMMA = 0x2c;
const QUOTE = 0x22;

/** One row of the file. */
export interface AsnRange {
  start: bigint;
  end: bigint;
  asn: number;
  org: string;
}

function lineStart(buf: Buffer, pos: number): number {
  let i = pos;
  while (i > 0 && buf[i - 1] !== NEWLINE) i--;
  return i;
}

function nextLine(buf: Buffer, pos: number): number {
  const i = buf.indexOf(NEWLINE, pos);
  return i < 0 ? buf.length : i + 1;
}

/** The number before the first comma of the line at `at`. */
function startOf(buf: Buffer, at: number): bigint {
  return BigInt(buf.toString('latin1', at, buf.indexOf(COMMA, at)));
}

/** Parses the line at `at`: the organisation may be quoted (RFC 4180: `""` inside stands for `"`). */
export function parseRangeLine(buf: Buffer, at: number): AsnRange {
  const end = nextLine(buf, at);
  const line = buf.toString('utf8', at, buf[end - 1] === NEWLINE ? end - 1 : end).replace(/\r$/, '');
  const [start = '', last = '', asn = ''] = line.split(',', 3);
  const orgAt = start.length + last.length + asn.length + 3;
  const raw = line.slice(orgAt);
  const org = raw.charCodeAt(0) === QUOTE ? raw.slice(1, -1).replace(/""/g, '"') : raw;
  return { start: BigInt(start), end: BigInt(last), asn: Number(asn), org };
}

/**
 * The range holding `value`, or undefined (a gap, or an empty file).
 *
 * @param buf - the whole file
 * @param value - the address as a number (`ipNumber`), of the file's family
 */
export function findRange(buf: Buffer, value: bigint): AsnRange | undefined {
  // [lo, hi) holds whole lines; `found` is the last line seen whose start is at most `value`.
  let lo = 0;
  let hi = buf.length;
  let found: number | undefined;
  while (lo < hi) {
    const at = lineStart(buf, (lo + hi) >>> 1);
    if (at >= hi || buf.indexOf(COMMA, at) < 0) break;
    if (startOf(buf, at) <= value) {
      found = at;
      lo = nextLine(buf, at);
    } else hi = at;
  }
  if (found === undefined) return undefined;
  const range = parseRangeLine(buf, found);
  return value <= range.end ? range : undefined;
}
