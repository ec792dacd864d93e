/** Upload streams: the call, then STREAM data packets, an empty end-of-stream packet, and the daemon's confirmation. */
import type { CallOptions, UploadSource } from './types.js';
import { type Packet, PacketStatus, PacketType, STREAM_CHUNK_MAX } from './packet.js';
import type { RpcClient } from './rpc.js';

/** Yields the source's bytes in pieces no larger than one stream packet carries. */
async function* pieces(data: UploadSource): AsyncGenerator<Uint8Array> {
  const chunks = data instanceof Uint8Array ? [data] : data;
  for await (const chunk of chunks) {
    for (let at = 0; at < chunk.length; at += STREAM_CHUNK_MAX) yield chunk.subarray(at, at + STREAM_CHUNK_MAX);
  }
}

/**
 * Runs an upload procedure: sends the call, waits for the daemon to accept it, streams `data`, sends
 * the end-of-stream packet and resolves when the daemon confirms it finished writing. On a failure of
 * ours (timeout, abort, a throwing source) the daemon is told to abort the stream.
 *
 * @param args - the procedure's encoded arguments
 */
export function upload(
  rpc: RpcClient,
  procedure: number,
  name: string,
  args: Buffer,
  data: UploadSource,
  options: CallOptions = {},
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const serial = rpc.nextSerial();
    let settled = false;
    let accepted = false;
    let releaseGuard = (): void => {};
    let markAccepted: () => void = () => {};
    const acceptance = new Promise<void>((resolveAccepted) => (markAccepted = resolveAccepted));

    const finish = (error?: Error, tellDaemon = false): void => {
      if (settled) return;
      settled = true;
      rpc.unregister(serial);
      releaseGuard();
      // An abort packet (ERROR, empty body) makes the daemon drop the partial upload.
      if (tellDaemon && accepted && !rpc.closed) rpc.send(procedure, PacketType.STREAM, serial, PacketStatus.ERROR);
      markAccepted();
      if (error) reject(error);
      else resolve();
    };

    const guard = rpc.guard(serial, name, options, (error) => finish(error, true));
    if (!guard) return;
    releaseGuard = () => guard.release();
    rpc.register(serial, {
      onPacket: (packet: Packet) => {
        if (packet.status === PacketStatus.ERROR) return finish(rpc.replyError(packet, name));
        if (packet.type === PacketType.REPLY) {
          accepted = true;
          markAccepted();
        } else if (packet.type === PacketType.STREAM && packet.status === PacketStatus.OK) {
          finish();
        }
      },
      fail: (error) => finish(error, true),
    });
    rpc.send(procedure, PacketType.CALL, serial, PacketStatus.OK, args);

    const sendAll = async (): Promise<void> => {
      await acceptance;
      for await (const piece of pieces(data)) {
        if (settled) return;
        if (!rpc.send(procedure, PacketType.STREAM, serial, PacketStatus.CONTINUE, piece)) await rpc.drained();
      }
      if (!settled) rpc.send(procedure, PacketType.STREAM, serial, PacketStatus.OK);
    };
    sendAll().catch((error: unknown) => finish(error instanceof Error ? error : new Error(String(error)), true));
  });
}
