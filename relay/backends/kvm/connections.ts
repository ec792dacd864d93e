/**
 * Connections to libvirt daemons, one per URI: dialled on first use, shared by every caller, and
 * dialled again after a drop. Only one dial per URI is in flight; callers arriving meanwhile wait
 * for it. A dial that takes longer than `connectTimeoutMs` fails that URI alone: other URIs have
 * their own connections and never wait for it.
 */
import type { Logger } from '../../../shared/logger.js';
import type { LibvirtConnection } from '../../libvirt/index.js';

/** Opens one connection; `signal` aborts a dial that is no longer wanted. */
export type Dial = (uri: string, signal: AbortSignal) => Promise<LibvirtConnection>;

export interface ConnectionPoolOptions {
  dial: Dial;
  connectTimeoutMs: number;
  logger: Logger;
}

/** Thrown when a URI cannot be dialled in time; `cause` is what the dial failed with. */
export class DialError extends Error {
  override readonly name = 'DialError';
  constructor(
    readonly uri: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export class ConnectionPool {
  private readonly live = new Map<string, LibvirtConnection>();
  private readonly dialing = new Map<string, Promise<LibvirtConnection>>();
  private closed = false;

  constructor(private readonly opts: ConnectionPoolOptions) {}

  /**
   * @returns the open connection to `uri`, dialling it when there is none
   * @throws DialError when the dial fails or times out
   */
  get(uri: string): Promise<LibvirtConnection> {
    if (this.closed) return Promise.reject(new DialError(uri, 'the connection pool is closed'));
    const open = this.live.get(uri);
    if (open && !open.closed) return Promise.resolve(open);
    let pending = this.dialing.get(uri);
    if (!pending) {
      pending = this.dialOnce(uri).finally(() => this.dialing.delete(uri));
      this.dialing.set(uri, pending);
    }
    return pending;
  }

  /** Closes every connection; dials in flight are aborted. Later `get`s fail. */
  async close(): Promise<void> {
    this.closed = true;
    const dials = [...this.dialing.values()].map((d) => d.catch(() => undefined));
    const open = [...this.live.values()];
    this.live.clear();
    await Promise.all(open.map((c) => c.close().catch(() => undefined)));
    await Promise.all(dials);
  }

  private async dialOnce(uri: string): Promise<LibvirtConnection> {
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        controller.abort();
        reject(new DialError(uri, `no answer from ${uri} within ${this.opts.connectTimeoutMs} ms`));
      }, this.opts.connectTimeoutMs);
    });
    const dial = this.opts.dial(uri, controller.signal);
    let conn: LibvirtConnection;
    try {
      conn = await Promise.race([dial, timeout]);
    } catch (err) {
      // A dial that completes after its timeout is not used: close it.
      void dial.then((late) => late.close()).catch(() => undefined);
      if (err instanceof DialError) throw err;
      throw new DialError(uri, `cannot connect to ${uri}: ${err instanceof Error ? err.message : String(err)}`, {
        cause: err,
      });
    } finally {
      clearTimeout(timer);
    }
    if (this.closed) {
      await conn.close().catch(() => undefined);
      throw new DialError(uri, 'the connection pool is closed');
    }
    this.live.set(uri, conn);
    conn.onClose((reason) => {
      if (this.live.get(uri) === conn) this.live.delete(uri);
      if (reason) this.opts.logger.warn('libvirt connection lost; the next call dials again', { uri, error: reason });
    });
    this.opts.logger.debug('libvirt connection open', { uri });
    return conn;
  }
}
