/** libvirt RPC packets: a 4-byte length (counting itself), a 24-byte header, then the XDR body. */
import { LibvirtProtocolError } from './errors.js';

/** `REMOTE_PROGRAM`: the main remote protocol. */
export const REMOTE_PROGRAM = 0x20008086;
export const REMOTE_VERSION = 1;
/** `QEMU_PROGRAM` (`qemu_protocol.x`): the qemu driver's own procedures, such as guest agent commands. */
export const QEMU_PROGRAM = 0x20008087;

/** `KEEPALIVE_PROGRAM` ("keep"): PING and PONG messages, in both directions. */
export const KEEPALIVE_PROGRAM = 0x6b656570;
export const KEEPALIVE_VERSION = 1;
export const KEEPALIVE_PING = 1;
export const KEEPALIVE_PONG = 2;

/** `virNetMessageType`. */
export const PacketType = { CALL: 0, REPLY: 1, MESSAGE: 2, STREAM: 3 } as const;
/** `virNetMessageStatus`. */
export const PacketStatus = { OK: 0, ERROR: 1, CONTINUE: 2 } as const;

/** `VIR_NET_MESSAGE_MAX`: the largest packet the daemon sends or accepts. */
export const PACKET_MAX = 32 * 1024 * 1024;
/** Largest data payload of one stream packet (`VIR_NET_MESSAGE_LEGACY_PAYLOAD_MAX`), as libvirt's client sends. */
export const STREAM_CHUNK_MAX = 262_120;
const HEADER_BYTES = 24;
const LENGTH_BYTES = 4;

/** The fixed header of every packet. */
export interface PacketHeader {
  program: number;
  version: number;
  procedure: number;
  type: number;
  serial: number;
  status: number;
}

/** A decoded packet. */
export interface Packet extends PacketHeader {
  body: Buffer;
}

/** Frames a packet: length, header, body. */
export function encodePacket(header: PacketHeader, body: Uint8Array = Buffer.alloc(0)): Buffer {
  const total = LENGTH_BYTES + HEADER_BYTES + body.length;
  if (total > PACKET_MAX) throw new RangeError(`packet of ${total} bytes exceeds ${PACKET_MAX}`);
  const packet = Buffer.alloc(total);
  packet.writeUInt32BE(total, 0);
  packet.writeUInt32BE(header.program, 4);
  packet.writeUInt32BE(header.version, 8);
  packet.writeInt32BE(header.procedure, 12);
  packet.writeUInt32BE(header.type, 16);
  packet.writeUInt32BE(header.serial, 20);
  packet.writeUInt32BE(header.status, 24);
  packet.set(body, LENGTH_BYTES + HEADER_BYTES);
  return packet;
}

/** Reassembles packets from a byte stream split at arbitrary points. */
export class PacketDecoder {
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  /**
   * Adds received bytes.
   * @returns every packet now complete, in order
   * @throws LibvirtProtocolError on an impossible length
   */
  push(chunk: Buffer): Packet[] {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    const packets: Packet[] = [];
    while (this.pendingBytes >= LENGTH_BYTES) {
      if (this.pending[0]!.length < LENGTH_BYTES) this.pending = [Buffer.concat(this.pending)];
      const total = this.pending[0]!.readUInt32BE(0);
      if (total < LENGTH_BYTES + HEADER_BYTES || total > PACKET_MAX) {
        throw new LibvirtProtocolError(`packet length ${total} outside ${LENGTH_BYTES + HEADER_BYTES}..${PACKET_MAX}`);
      }
      // Join the pieces only once the whole packet is here, so a large packet is copied once.
      if (this.pendingBytes < total) break;
      const head = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending);
      packets.push({
        program: head.readUInt32BE(4),
        version: head.readUInt32BE(8),
        procedure: head.readInt32BE(12),
        type: head.readUInt32BE(16),
        serial: head.readUInt32BE(20),
        status: head.readUInt32BE(24),
        body: head.subarray(LENGTH_BYTES + HEADER_BYTES, total),
      });
      const rest = head.subarray(total);
      this.pending = rest.length > 0 ? [rest] : [];
      this.pendingBytes = rest.length;
    }
    return packets;
  }
}
