/** Dials a libvirt daemon: transport, authentication check, CONNECT_OPEN, keepalive. */
import { ErrorCode } from './constants.js';
import { Connection } from './connection.js';
import { LibvirtCancelledError, LibvirtError, LibvirtTimeoutError } from './errors.js';
import type { LibvirtConnection } from './types.js';
import { AuthType, FEATURE_PROGRAM_KEEPALIVE, LIMITS } from './procedures.js';
import { type KeepaliveSettings, positive, RpcClient } from './rpc.js';
import { openTransport, type SshOptions, type TlsOptions } from './transports.js';
import { parseLibvirtUri } from './uri.js';

export type { SshOptions, TlsOptions } from './transports.js';

/** Keepalive of our side: a PING after `intervalMs` of silence; the connection drops after `count` unanswered. */
export interface KeepaliveOptions {
  /** Default 5000 (libvirt's client default). */
  intervalMs?: number;
  /** Default 5. */
  count?: number;
}

/** Options of {@link connect}. */
export interface ConnectOptions {
  /** Deadline of the whole dial (transport, auth, CONNECT_OPEN); default 10 s. */
  timeoutMs?: number;
  /** Default deadline of each call; default 30 s. Per-call `timeoutMs` overrides it. */
  callTimeoutMs?: number;
  /**
   * `false`: no pings of ours, and the daemon is not asked for its keepalive (CONNECT_SUPPORTS_FEATURE),
   * so it sends none either; any ping that does arrive is still answered.
   */
  keepalive?: KeepaliveOptions | false;
  /** Aborting cancels the dial with {@link LibvirtCancelledError} (it does not affect the connection once open). */
  signal?: AbortSignal;
  tls?: TlsOptions;
  ssh?: SshOptions;
  /** Where `XDG_RUNTIME_DIR` is read for `/session` sockets; default `process.env`. */
  env?: NodeJS.ProcessEnv;
}

const VIR_FROM_AUTH = 46;

function keepaliveSettings(options: KeepaliveOptions = {}): KeepaliveSettings {
  const count = options.count ?? 5;
  if (!Number.isInteger(count) || count < 1)
    throw new RangeError(`keepalive.count must be an integer ≥ 1, got ${count}`);
  return { intervalMs: positive('keepalive.intervalMs', options.intervalMs ?? 5_000), count };
}

/** Runs `dial` under a deadline and the caller's signal; the signal given to `dial` aborts on either. */
async function withDeadline<T>(
  what: string,
  timeoutMs: number,
  outer: AbortSignal | undefined,
  dial: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new LibvirtTimeoutError(what, timeoutMs)), timeoutMs);
  const onOuterAbort = (): void =>
    controller.abort(new LibvirtCancelledError(`libvirt ${what} cancelled`, { cause: outer?.reason }));
  if (outer?.aborted) onOuterAbort();
  outer?.addEventListener('abort', onOuterAbort, { once: true });
  try {
    return await dial(controller.signal);
  } catch (error) {
    throw controller.signal.aborted ? controller.signal.reason : error;
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener('abort', onOuterAbort);
  }
}

/**
 * Opens a connection to the daemon `uri` names.
 *
 * @param uri - a libvirt URI, e.g. `qemu+ssh://user@host/system` or `test+tcp://127.0.0.1:16509/default`
 * @returns the open connection; close it with `close()`
 * @throws LibvirtUriError for a bad URI, RangeError for a bad option, LibvirtConnectionLostError when
 *   the daemon cannot be reached, LibvirtTimeoutError after `timeoutMs`, LibvirtCancelledError when
 *   `signal` aborts, LibvirtError when the daemon refuses (e.g. CONNECT_OPEN of an unknown driver)
 * @example
 * const conn = await connect('qemu+ssh://relay@beelink/system', { callTimeoutMs: 15_000 });
 * const dom = await conn.lookupDomainByName('proxy-1');
 */
export async function connect(uri: string, options: ConnectOptions = {}): Promise<LibvirtConnection> {
  const parsed = parseLibvirtUri(uri, options.env);
  const timeoutMs = positive('timeoutMs', options.timeoutMs ?? 10_000);
  const callTimeoutMs = positive('callTimeoutMs', options.callTimeoutMs ?? 30_000);
  const keepalive = options.keepalive === false ? false : keepaliveSettings(options.keepalive);
  return withDeadline(`connect ${uri}`, timeoutMs, options.signal, async (signal) => {
    const transport = await openTransport(parsed, { tls: options.tls, ssh: options.ssh, signal });
    const rpc = new RpcClient(transport, callTimeoutMs, keepalive);
    const connection = new Connection(uri, rpc);
    const dialOptions = { signal, timeoutMs };
    try {
      const authTypes = await connection.invoke(
        'AUTH_LIST',
        () => undefined,
        (r) => r.array((a) => a.int(), LIMITS.AUTH_TYPES),
        dialOptions,
      );
      if (authTypes.length > 0 && !authTypes.includes(AuthType.NONE)) {
        if (!authTypes.includes(AuthType.POLKIT)) {
          const fields = { code: ErrorCode.AUTH_UNAVAILABLE, domain: VIR_FROM_AUTH, level: 2 };
          const message = `the daemon requires SASL authentication (types ${authTypes.join(', ')}), which this client does not speak`;
          throw new LibvirtError({ ...fields, message }, 'AUTH_LIST');
        }
        await connection.invoke(
          'AUTH_POLKIT',
          () => undefined,
          (r) => r.int(),
          dialOptions,
        );
      }
      await connection.invoke(
        'CONNECT_OPEN',
        (w) => w.optString(parsed.remoteName).uint(0),
        () => undefined,
        dialOptions,
      );
      // Asking about the keepalive program is how a client tells the daemon it answers pings.
      if (keepalive) {
        await connection.invoke(
          'CONNECT_SUPPORTS_FEATURE',
          (w) => w.int(FEATURE_PROGRAM_KEEPALIVE).uint(0),
          (r) => r.int(),
          dialOptions,
        );
      }
      return connection;
    } catch (error) {
      rpc.shutdown();
      throw error;
    }
  });
}
