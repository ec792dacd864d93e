/** Typed errors of the libvirt client: libvirt's own (with its codes), connection, timeout, cancellation, protocol, URI. */

/** The fields of libvirt's `remote_error`. */
export interface RemoteErrorFields {
  /** A `virErrorNumber`; compare with {@link ErrorCode}. */
  code: number;
  /** A `virErrorDomain`: which part of libvirt raised it. */
  domain: number;
  /** Human-readable only: never branch on it. */
  message: string;
  /** `virErrorLevel`: 0 none, 1 warning, 2 error. */
  level: number;
}

/** An error the daemon returned for a call. Check `code` (see {@link ErrorCode}), never `message`. */
export class LibvirtError extends Error {
  override readonly name = 'LibvirtError';
  readonly code: number;
  readonly domain: number;
  readonly level: number;
  /** The procedure that failed, e.g. `DOMAIN_LOOKUP_BY_NAME`. */
  readonly procedure: string;

  constructor(fields: RemoteErrorFields, procedure: string) {
    super(`libvirt ${procedure}: ${fields.message} (code ${fields.code}, domain ${fields.domain})`);
    this.code = fields.code;
    this.domain = fields.domain;
    this.level = fields.level;
    this.procedure = procedure;
  }
}

/**
 * True when `error` is a {@link LibvirtError} with one of `codes`.
 * @example `if (isLibvirtError(e, ErrorCode.NO_DOMAIN)) return undefined;`
 */
export function isLibvirtError(error: unknown, ...codes: number[]): error is LibvirtError {
  return error instanceof LibvirtError && (codes.length === 0 || codes.includes(error.code));
}

/** The connection cannot carry calls any more; dial a new one. */
export class LibvirtConnectionError extends Error {
  override readonly name: string = 'LibvirtConnectionError';
}

/** The transport failed: socket error, daemon gone, missed keepalives, or a broken packet. */
export class LibvirtConnectionLostError extends LibvirtConnectionError {
  override readonly name = 'LibvirtConnectionLostError';
}

/** The connection was closed by `close()` before or while the call ran. */
export class LibvirtConnectionClosedError extends LibvirtConnectionError {
  override readonly name = 'LibvirtConnectionClosedError';
}

/** A call (or the dial) took longer than its timeout. The connection stays usable. */
export class LibvirtTimeoutError extends Error {
  override readonly name = 'LibvirtTimeoutError';
  readonly timeoutMs: number;

  constructor(what: string, timeoutMs: number) {
    super(`libvirt ${what} timed out after ${timeoutMs} ms`);
    this.timeoutMs = timeoutMs;
  }
}

/** A call was cancelled through its AbortSignal; `cause` is the signal's reason. */
export class LibvirtCancelledError extends Error {
  override readonly name = 'LibvirtCancelledError';
}

/** The daemon sent something this client cannot decode; the connection is dropped. */
export class LibvirtProtocolError extends Error {
  override readonly name = 'LibvirtProtocolError';
}

/** A libvirt URI that cannot be used; `part` names the offending part (scheme, transport, host, port, path, query name). */
export class LibvirtUriError extends Error {
  override readonly name = 'LibvirtUriError';
  readonly part: string;

  constructor(uri: string, part: string, reason: string) {
    super(`libvirt URI ${JSON.stringify(uri)}: ${part}: ${reason}`);
    this.part = part;
  }
}
