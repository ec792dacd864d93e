/**
 * Header handling at the gateway hop (RFC 9110 §7.6.1): the hop-by-hop fields and every field
 * named in `Connection` are dropped in both directions, and so are the proxy-hop credentials
 * (`Proxy-Authorization` from the client is the gateway's own and is never forwarded).
 */
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';

/**
 * Fields that belong to one connection, whether or not `Connection` lists them: RFC 9110 §7.6.1
 * names Proxy-Connection, Keep-Alive, TE, Transfer-Encoding and Upgrade; `Trailer` goes with TE;
 * `Proxy-Authorization` / `Proxy-Authenticate` are the credentials and challenge of one proxy hop.
 */
export const HOP_BY_HOP = new Set([
  'connection',
  'proxy-connection',
  'keep-alive',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'proxy-authorization',
  'proxy-authenticate',
]);

/** The field names a `Connection` header lists (`close`, `keep-alive`, or any field name). */
export function connectionOptions(value: string | string[] | undefined): Set<string> {
  const values = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return new Set(
    values
      .flatMap((v) => v.split(','))
      .map((t) => t.trim().toLowerCase())
      .filter(Boolean),
  );
}

/**
 * The end-to-end fields of a message, as `[name, value]` pairs in their received order and case.
 *
 * @param raw - `rawHeaders` of an IncomingMessage (name, value, name, value, …)
 */
export function endToEndHeaders(raw: readonly string[]): [string, string][] {
  const listed = new Set<string>();
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (raw[i]?.toLowerCase() === 'connection') for (const o of connectionOptions(raw[i + 1])) listed.add(o);
  }
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] ?? '';
    const lower = name.toLowerCase();
    if (!HOP_BY_HOP.has(lower) && !listed.has(lower)) out.push([name, raw[i + 1] ?? '']);
  }
  return out;
}

/** Pairs folded into the object form `http.request` and `writeHead` take (repeated names become arrays). */
export function toOutgoing(pairs: readonly [string, string][]): OutgoingHttpHeaders {
  const out: Record<string, string | string[]> = {};
  const caseOf = new Map<string, string>();
  for (const [name, value] of pairs) {
    const lower = name.toLowerCase();
    const key = caseOf.get(lower) ?? name;
    caseOf.set(lower, key);
    const prev = out[key];
    out[key] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
  }
  return out;
}

/** True when a request carries a body (RFC 9112 §6.3: a Content-Length above 0 or a Transfer-Encoding). */
export function hasBody(headers: IncomingHttpHeaders): boolean {
  if (headers['transfer-encoding'] !== undefined) return true;
  const length = headers['content-length'];
  return length !== undefined && Number(length) > 0;
}
