/** The RPC engine over one transport: serials, pipelined replies, per-call deadlines, keepalive, and drop handling. */
import type { Duplex } from 'node:stream';
import {
  LibvirtCancelledError,
  LibvirtConnectionClosedError,
  LibvirtConnectionError,
  LibvirtConnectionLostError,
  LibvirtError,
  LibvirtTimeoutError,
} from './errors.js';
import type { CallOptions, CloseReason } from './types.js';
import {
  encodePacket,
  KEEPALIVE_PING,
  KEEPALIVE_PONG,
  KEEPALIVE_PROGRAM,
  QEMU_PROGRAM,
  KEEPALIVE_VERSION,
  type Packet,
  PacketDecoder,
  PacketStatus,
  PacketType,
  REMOTE_PROGRAM,
  REMOTE_VERSION,
} from './packet.js';
import { decodeRemoteError } from './remote-error.js';
import { endReason } from './transports.js';

/** libvirt's defaults for its client: a ping after 5 s of silence, dropped after 5 unanswered. */
export interface KeepaliveSettings {
  intervalMs: number;
  count: number;
}

/** Receives the packets of one serial until it unregisters. */
export interface PendingEntry {
  onPacket(packet: Packet): void;
  /** The connection ended or the entry's deadline passed. */
  fail(error: Error): void;
}

/** The deadline and cancellation of one operation. */
export interface Guard {
  /** Removes the timer and abort listener. */
  release(): void;
}

/**
 * Returns `value` when it is a positive finite number.
 * @throws RangeError naming `field` otherwise
 */
export function positive(field: string, value: number): number {
  if (!(typeof value === 'number' && Number.isFinite(value) && value > 0)) {
    throw new RangeError(`${field} must be a positive number, got ${String(value)}`);
  }
  return value;
}

/** Speaks libvirt's RPC framing on a duplex byte stream. */
export class RpcClient {
  private readonly decoder = new PacketDecoder();
  private readonly pending = new Map<number, PendingEntry>();
  private readonly listeners = new Set<(reason: CloseReason) => void>();
  private lastSerial = 0;
  private lastReceived = Date.now();
  private missedPings = 0;
  private keepaliveTimer: NodeJS.Timeout | undefined;
  private ended: LibvirtConnectionError | undefined;
  private closing = false;

  constructor(
    private readonly transport: Duplex,
    /** Deadline of calls that give none. */
    readonly callTimeoutMs: number,
    keepalive: KeepaliveSettings | false,
  ) {
    transport.on('data', (chunk: Buffer) => this.receive(chunk));
    transport.on('error', (error) => this.drop(`transport error: ${error.message}`, error));
    transport.on('end', () => this.drop(endReason(transport) ?? 'the daemon closed the connection'));
    transport.on('close', () => this.drop('the connection closed'));
    if (keepalive) {
      this.keepaliveTimer = setInterval(() => this.keepaliveTick(keepalive), keepalive.intervalMs);
      this.keepaliveTimer.unref();
    }
  }

  /** True once closed or lost. */
  get closed(): boolean {
    return this.ended !== undefined;
  }

  /** See {@link LibvirtConnection.onClose}; a listener added after the end is called at once. */
  onClose(listener: (reason: CloseReason) => void): () => void {
    if (this.ended) {
      const reason = this.ended;
      queueMicrotask(() => listener(reason instanceof LibvirtConnectionLostError ? reason : undefined));
      return () => {};
    }
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Makes one call and waits for its reply.
   * @param procedure - the REMOTE_PROC number (or QEMU_PROC with `program` QEMU_PROGRAM)
   * @param name - the procedure's name, for errors
   * @returns the reply body (XDR)
   */
  call(
    procedure: number,
    name: string,
    args: Buffer,
    options: CallOptions = {},
    program: number = REMOTE_PROGRAM,
  ): Promise<Buffer> {
    return new Promise<Buffer>((resolve, reject) => {
      const serial = this.nextSerial();
      const guard = this.guard(serial, name, options, reject);
      if (!guard) return;
      this.register(serial, {
        onPacket: (packet) => {
          if (packet.type !== PacketType.REPLY) return;
          this.unregister(serial);
          guard.release();
          if (packet.status === PacketStatus.OK) resolve(packet.body);
          else reject(this.replyError(packet, name));
        },
        fail: (error) => {
          guard.release();
          reject(error);
        },
      });
      this.send(procedure, PacketType.CALL, serial, PacketStatus.OK, args, program);
    });
  }

  /** The next call serial (never 0, which keepalive messages use). */
  nextSerial(): number {
    this.lastSerial = this.lastSerial >= 0xffffffff ? 1 : this.lastSerial + 1;
    return this.lastSerial;
  }

  /** Routes the packets of `serial` to `entry`; throws the connection error once ended. */
  register(serial: number, entry: PendingEntry): void {
    if (this.ended) throw this.ended;
    this.pending.set(serial, entry);
  }

  /** Stops routing `serial`; later packets with it are dropped (a reply may arrive after a timeout). */
  unregister(serial: number): void {
    this.pending.delete(serial);
  }

  /**
   * Starts the deadline and abort handling of an operation on `serial`. On expiry the serial is
   * unregistered and `reject` receives the typed error.
   * @returns the guard, or `undefined` when it already failed (closed connection, aborted signal)
   */
  guard(serial: number, what: string, options: CallOptions, reject: (error: Error) => void): Guard | undefined {
    if (this.ended) {
      reject(this.ended);
      return undefined;
    }
    const { signal } = options;
    if (signal?.aborted) {
      reject(new LibvirtCancelledError(`libvirt ${what} cancelled`, { cause: signal.reason }));
      return undefined;
    }
    let timeoutMs: number;
    try {
      timeoutMs = positive('timeoutMs', options.timeoutMs ?? this.callTimeoutMs);
    } catch (error) {
      reject(error as Error);
      return undefined;
    }
    const expire = (error: Error): void => {
      const entry = this.pending.get(serial);
      this.unregister(serial);
      release();
      if (entry) entry.fail(error);
      else reject(error);
    };
    const timer = setTimeout(() => expire(new LibvirtTimeoutError(what, timeoutMs)), timeoutMs);
    const onAbort = (): void =>
      expire(new LibvirtCancelledError(`libvirt ${what} cancelled`, { cause: signal?.reason }));
    signal?.addEventListener('abort', onAbort, { once: true });
    const release = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    return { release };
  }

  /** Writes one packet (of REMOTE_PROGRAM by default). @returns false when the transport's buffer is full (wait for {@link drained}). */
  send(
    procedure: number,
    type: number,
    serial: number,
    status: number,
    body?: Uint8Array,
    program: number = REMOTE_PROGRAM,
  ): boolean {
    if (this.ended) throw this.ended;
    // qemu_protocol.x and remote_protocol.x are both at version 1.
    const header = { program, version: REMOTE_VERSION, procedure, type, serial, status };
    return this.transport.write(encodePacket(header, body));
  }

  /** Resolves when the transport can take more data, or rejects when the connection ends first. */
  drained(): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.ended) return reject(this.ended);
      const done = (error?: Error): void => {
        this.transport.off('drain', onDrain);
        this.listeners.delete(onEnd);
        if (error) reject(error);
        else resolve();
      };
      const onDrain = (): void => done();
      const onEnd = (): void => done(this.ended);
      this.transport.once('drain', onDrain);
      this.listeners.add(onEnd);
    });
  }

  /** The typed error in an ERROR reply or stream packet. */
  replyError(packet: Packet, procedure: string): Error {
    try {
      return new LibvirtError(decodeRemoteError(packet.body), procedure);
    } catch (error) {
      return error as Error;
    }
  }

  /** From now on the transport ending is our own doing (the daemon hangs up after CONNECT_CLOSE), not a loss. */
  beginClose(): void {
    this.closing = true;
  }

  /** Ends the connection: calls in flight reject with {@link LibvirtConnectionClosedError}. Idempotent. */
  shutdown(): void {
    this.end(new LibvirtConnectionClosedError('libvirt connection closed'));
  }

  private receive(chunk: Buffer): void {
    this.lastReceived = Date.now();
    this.missedPings = 0;
    let packets: Packet[];
    try {
      packets = this.decoder.push(chunk);
    } catch (error) {
      this.drop(`undecodable data: ${(error as Error).message}`, error);
      return;
    }
    for (const packet of packets) {
      if (packet.program === KEEPALIVE_PROGRAM) {
        if (packet.procedure === KEEPALIVE_PING) this.sendKeepalive(KEEPALIVE_PONG);
        continue;
      }
      // Events (MESSAGE) and other programs are not subscribed to; replies to expired serials are late.
      if ((packet.program !== REMOTE_PROGRAM && packet.program !== QEMU_PROGRAM) || packet.type === PacketType.MESSAGE)
        continue;
      try {
        this.pending.get(packet.serial)?.onPacket(packet);
      } catch (error) {
        this.drop(`bad reply to serial ${packet.serial}: ${(error as Error).message}`, error);
        return;
      }
    }
  }

  private sendKeepalive(procedure: number): void {
    if (this.ended) return;
    const header = {
      program: KEEPALIVE_PROGRAM,
      version: KEEPALIVE_VERSION,
      procedure,
      type: PacketType.MESSAGE,
      serial: 0,
      status: PacketStatus.OK,
    };
    this.transport.write(encodePacket(header));
  }

  private keepaliveTick(settings: KeepaliveSettings): void {
    if (Date.now() - this.lastReceived < settings.intervalMs) return;
    if (this.missedPings >= settings.count) {
      this.drop(`no answer to ${settings.count} keepalive pings ${settings.intervalMs} ms apart`);
      return;
    }
    this.missedPings += 1;
    this.sendKeepalive(KEEPALIVE_PING);
  }

  private drop(reason: string, cause?: unknown): void {
    if (this.closing) return this.shutdown();
    this.end(new LibvirtConnectionLostError(`libvirt connection lost: ${reason}`, { cause }));
  }

  private end(error: LibvirtConnectionError): void {
    if (this.ended) return;
    this.ended = error;
    clearInterval(this.keepaliveTimer);
    this.transport.destroy();
    const entries = [...this.pending.values()];
    this.pending.clear();
    for (const entry of entries) entry.fail(error);
    const reason = error instanceof LibvirtConnectionLostError ? error : undefined;
    for (const listener of [...this.listeners]) listener(reason);
    this.listeners.clear();
  }
}
