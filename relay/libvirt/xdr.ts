/** XDR (RFC 4506) encoding and decoding of the types libvirt's remote protocol uses. */
import { LibvirtProtocolError } from './errors.js';

/** libvirt's `REMOTE_STRING_MAX`: the longest string either side accepts. */
export const STRING_MAX = 4_194_304;

const pad = (length: number): number => (4 - (length % 4)) % 4;

/** Appends XDR values to a growing buffer. */
export class XdrWriter {
  private buffer = Buffer.alloc(256);
  private length = 0;

  /** Claims `bytes` and returns their offset. It may replace `this.buffer`: callers read that only afterwards. */
  private reserve(bytes: number): number {
    const start = this.length;
    if (start + bytes > this.buffer.length) {
      const grown = Buffer.alloc(Math.max(this.buffer.length * 2, start + bytes));
      this.buffer.copy(grown, 0, 0, start);
      this.buffer = grown;
    }
    this.length += bytes;
    return start;
  }

  /** Signed 32-bit `int`. */
  int(value: number): this {
    const at = this.reserve(4);
    this.buffer.writeInt32BE(value, at);
    return this;
  }

  /** `unsigned int` (also `unsigned char` and enums with unsigned values). */
  uint(value: number): this {
    const at = this.reserve(4);
    this.buffer.writeUInt32BE(value, at);
    return this;
  }

  /** Signed 64-bit `hyper`. */
  hyper(value: bigint): this {
    const at = this.reserve(8);
    this.buffer.writeBigInt64BE(value, at);
    return this;
  }

  /** `unsigned hyper`. */
  uhyper(value: bigint): this {
    const at = this.reserve(8);
    this.buffer.writeBigUInt64BE(value, at);
    return this;
  }

  bool(value: boolean): this {
    return this.uint(value ? 1 : 0);
  }

  /** Fixed-length `opaque[n]`: exactly `n` bytes, padded. */
  fixedOpaque(bytes: Uint8Array, n: number): this {
    if (bytes.length !== n) throw new RangeError(`fixed opaque: expected ${n} bytes, got ${bytes.length}`);
    const start = this.reserve(n + pad(n));
    this.buffer.set(bytes, start);
    this.buffer.fill(0, start + n, start + n + pad(n));
    return this;
  }

  /** Variable-length `opaque<>`: length, bytes, padding. */
  opaque(bytes: Uint8Array): this {
    this.uint(bytes.length);
    return this.fixedOpaque(bytes, bytes.length);
  }

  /** `string<>` (libvirt's `remote_nonnull_string`), UTF-8. */
  string(value: string): this {
    const bytes = Buffer.from(value, 'utf8');
    if (bytes.length > STRING_MAX) throw new RangeError(`string of ${bytes.length} bytes exceeds ${STRING_MAX}`);
    return this.opaque(bytes);
  }

  /** Optional data (`T *`): a boolean, then the value when present. */
  optional<T>(value: T | undefined, write: (writer: this, value: T) => void): this {
    this.bool(value !== undefined);
    if (value !== undefined) write(this, value);
    return this;
  }

  /** libvirt's `remote_string` (an optional string). */
  optString(value: string | undefined): this {
    return this.optional(value, (w, v) => w.string(v));
  }

  /** The bytes written so far. */
  finish(): Buffer {
    return this.buffer.subarray(0, this.length);
  }
}

/** Reads XDR values in order; any overrun or bad value throws {@link LibvirtProtocolError}. */
export class XdrReader {
  private offset = 0;

  constructor(private readonly buffer: Buffer) {}

  private take(bytes: number): number {
    const start = this.offset;
    if (start + bytes > this.buffer.length) {
      throw new LibvirtProtocolError(`XDR: need ${bytes} bytes at offset ${start}, have ${this.buffer.length - start}`);
    }
    this.offset += bytes;
    return start;
  }

  int(): number {
    return this.buffer.readInt32BE(this.take(4));
  }

  uint(): number {
    return this.buffer.readUInt32BE(this.take(4));
  }

  hyper(): bigint {
    return this.buffer.readBigInt64BE(this.take(8));
  }

  uhyper(): bigint {
    return this.buffer.readBigUInt64BE(this.take(8));
  }

  bool(): boolean {
    const value = this.uint();
    if (value > 1) throw new LibvirtProtocolError(`XDR: boolean ${value} is neither 0 nor 1`);
    return value === 1;
  }

  fixedOpaque(n: number): Uint8Array {
    const start = this.take(n + pad(n));
    return new Uint8Array(this.buffer.subarray(start, start + n));
  }

  opaque(max = STRING_MAX): Uint8Array {
    const length = this.uint();
    if (length > max) throw new LibvirtProtocolError(`XDR: opaque of ${length} bytes exceeds ${max}`);
    return this.fixedOpaque(length);
  }

  string(): string {
    return Buffer.from(this.opaque()).toString('utf8');
  }

  optional<T>(read: (reader: this) => T): T | undefined {
    return this.bool() ? read(this) : undefined;
  }

  optString(): string | undefined {
    return this.optional((r) => r.string());
  }

  /** Variable-length array `T<max>`. */
  array<T>(read: (reader: this) => T, max: number): T[] {
    const count = this.uint();
    if (count > max) throw new LibvirtProtocolError(`XDR: array of ${count} exceeds ${max}`);
    const items: T[] = [];
    for (let i = 0; i < count; i++) items.push(read(this));
    return items;
  }

  /** Throws unless every byte was read: a reply longer than its type means a wrong layout. */
  end(): void {
    if (this.offset !== this.buffer.length) {
      throw new LibvirtProtocolError(`XDR: ${this.buffer.length - this.offset} bytes left over`);
    }
  }
}
