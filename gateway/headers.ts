/**
 * Header handling at the gateway hop (RFC 9110 §7.6.1): the hop-by-hop fields and every field
 * named in `Connection` are dropped in both directions, and so are the proxy-hop credentials
 * (`Proxy-Authorization` from the client is the gateway's own and is never forwarded).
 */
import type { IncomingHttpHeaders } from 'node:http';

/**
 * Fields that belong to one connection, whether or not `Connection` lists them: RFC 9110 §7.6.1
 * names Proxy-Connection, Keep-Alive, TE, Transfer-Encoding and Upgrade; `Trailer` goes with TE;
 * `Proxy-Authorization` / `Proxy-Authenticate` are the credentials and challenge of one proxy hop.
 */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
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

/**
 * Adds to `listed` the field names a `Connection` value lists that are not hop-by-hop already
 * (`keep-alive`, the option keep-alive clients send on every request, adds nothing and allocates nothing).
 *
 * @returns `listed`, created on the first name added
 */
function addListed(value: string, listed: Set<string> | undefined): Set<string> | undefined {
  for (const token of value.split(',')) {
    const option = token.trim().toLowerCase();
    if (option !== '' && !HOP_BY_HOP.has(option)) (listed ??= new Set()).add(option);
  }
  return listed;
}

/**
 * The end-to-end fields of a message as a flat `[name, value, name, value, …]` array, in their
 * received order and spelling (repeated fields stay separate lines): the form `http.request`'s
 * `headers` and `writeHead` take as they are, with no object built in between.
 *
 * @param raw - `rawHeaders` of an IncomingMessage (name, value, name, value, …)
 * @param drop - further lower-case names to leave out (`content-length` where the body is re-framed)
 */
export function endToEndHeaders(raw: readonly string[], drop?: ReadonlySet<string>): string[] {
  const out: string[] = [];
  let listed: Set<string> | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] ?? '';
    const lower = name.toLowerCase();
    if (lower === 'connection') listed = addListed(raw[i + 1] ?? '', listed);
    else if (!HOP_BY_HOP.has(lower) && drop?.has(lower) !== true) out.push(name, raw[i + 1] ?? '');
  }
  // A field named in Connection may come before it: such names (other than `keep-alive`, which is
  // hop-by-hop anyway) are taken out once the whole head has been read.
  return listed === undefined ? out : withoutNames(out, listed);
}

/** `flat` without the fields whose lower-case names are in `names`. */
function withoutNames(flat: readonly string[], names: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const name = flat[i] ?? '';
    if (!names.has(name.toLowerCase())) out.push(name, flat[i + 1] ?? '');
  }
  return out;
}

/** True when a request carries a body (RFC 9112 §6.3: a Content-Length above 0 or a Transfer-Encoding). */
export function hasBody(headers: IncomingHttpHeaders): boolean {
  if (headers['transfer-encoding'] !== undefined) return true;
  const length = headers['content-length'];
  return length !== undefined && Number(length) > 0;
}
