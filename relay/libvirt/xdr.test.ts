import { describe, expect, it } from 'vitest';
import { LibvirtProtocolError } from './errors.js';
import { encodePacket, PacketDecoder, PacketStatus, PacketType, REMOTE_PROGRAM } from './packet.js';
import { decodeRemoteError } from './remote-error.js';
import { XdrReader, XdrWriter } from './xdr.js';

describe('libvirt client: XDR', () => {
  it('round-trips every type with RFC 4506 sizes and padding', () => {
    const uuid = Uint8Array.from({ length: 16 }, (_, i) => i);
    const bytes = new XdrWriter()
      .int(-2)
      .uint(0xfffffffe)
      .hyper(-5n)
      .uhyper(2n ** 64n - 1n)
      .bool(true)
      .string('héllo')
      .optString(undefined)
      .optString('x')
      .fixedOpaque(uuid, 16)
      .opaque(Uint8Array.of(1, 2, 3))
      .finish();
    // 4+4+8+8+4 + (4+8 "héllo" is 6 bytes → padded 8) + 4 + (4+4+4) + 16 + (4+4)
    expect(bytes.length).toBe(4 + 4 + 8 + 8 + 4 + 12 + 4 + 12 + 16 + 8);
    const r = new XdrReader(bytes);
    expect([r.int(), r.uint(), r.hyper(), r.uhyper(), r.bool(), r.string(), r.optString(), r.optString()]).toEqual([
      -2,
      0xfffffffe,
      -5n,
      2n ** 64n - 1n,
      true,
      'héllo',
      undefined,
      'x',
    ]);
    expect(r.fixedOpaque(16)).toEqual(uuid);
    expect(r.opaque()).toEqual(Uint8Array.of(1, 2, 3));
    r.end();
  });

  it('keeps every value when the buffer grows between numbers and strings', () => {
    const writer = new XdrWriter();
    for (let i = 0; i < 300; i++)
      writer
        .string('x'.repeat(i % 7))
        .uint(i)
        .hyper(BigInt(-i));
    const reader = new XdrReader(writer.finish());
    for (let i = 0; i < 300; i++)
      expect([reader.string(), reader.uint(), reader.hyper()]).toEqual(['x'.repeat(i % 7), i, BigInt(-i)]);
    reader.end();
  });

  it('pads with zeros and rejects overruns, bad booleans, oversized arrays and leftovers', () => {
    expect([...new XdrWriter().string('a').finish()]).toEqual([0, 0, 0, 1, 97, 0, 0, 0]);
    expect(() => new XdrReader(Buffer.from([0, 0, 0, 9, 1])).string()).toThrow(LibvirtProtocolError);
    expect(() => new XdrReader(new XdrWriter().uint(2).finish()).bool()).toThrow(/neither 0 nor 1/);
    expect(() => new XdrReader(new XdrWriter().uint(3).finish()).array((x) => x.int(), 2)).toThrow(/exceeds 2/);
    const leftover = new XdrReader(new XdrWriter().int(1).int(2).finish());
    leftover.int();
    expect(() => leftover.end()).toThrow(/4 bytes left over/);
    expect(() => new XdrWriter().fixedOpaque(Uint8Array.of(1), 16)).toThrow(RangeError);
  });
});

describe('libvirt client: packets', () => {
  const header = {
    program: REMOTE_PROGRAM,
    version: 1,
    procedure: 212,
    type: PacketType.REPLY,
    status: PacketStatus.OK,
  };

  it('frames with a length that counts itself and reassembles packets split anywhere', () => {
    const first = encodePacket({ ...header, serial: 7 }, new XdrWriter().int(1).int(5).finish());
    const second = encodePacket({ ...header, serial: 8 });
    expect(first.readUInt32BE(0)).toBe(first.length);
    expect(first.length).toBe(4 + 24 + 8);
    const all = Buffer.concat([first, second]);
    for (let cut = 0; cut <= all.length; cut++) {
      const decoder = new PacketDecoder();
      const packets = [...decoder.push(all.subarray(0, cut)), ...decoder.push(all.subarray(cut))];
      expect(packets.map((p) => [p.serial, p.procedure, p.body.length])).toEqual([
        [7, 212, 8],
        [8, 212, 0],
      ]);
    }
  });

  it('rejects impossible lengths', () => {
    expect(() => new PacketDecoder().push(Buffer.from([0, 0, 0, 8, 0, 0, 0, 0]))).toThrow(LibvirtProtocolError);
    expect(() => new PacketDecoder().push(Buffer.from([0x7f, 0, 0, 0]))).toThrow(/outside/);
  });

  it('decodes remote_error with its optional domain, strings and network', () => {
    const body = new XdrWriter()
      .int(42)
      .int(12)
      .optString('Domain not found')
      .int(2)
      .optional({ name: 'd' }, (w, d) => w.string(d.name).fixedOpaque(new Uint8Array(16), 16).int(-1))
      .optString('s1')
      .optString(undefined)
      .optString(undefined)
      .int(0)
      .int(0)
      .optString(undefined) // remote_network absent: same encoding as an absent pointer
      .finish();
    expect(decodeRemoteError(body)).toEqual({ code: 42, domain: 12, message: 'Domain not found', level: 2 });
    expect(() => decodeRemoteError(body.subarray(0, body.length - 4))).toThrow(LibvirtProtocolError);
  });
});
