/**
 * A minimal ISO 9660 image writer with Joliet names, enough for a cloud-init NoCloud seed: one
 * root directory of small files. The bytes depend only on the input (the date is a parameter), so
 * a seed can be compared byte for byte.
 *
 * Layout (2048-byte sectors): 0–15 system area, 16 primary volume descriptor, 17 Joliet
 * supplementary descriptor, 18 terminator, 19–22 path tables (primary L/M, Joliet L/M), 23 primary
 * root directory, 24 Joliet root directory, 25… file data. The primary tree carries ISO level-1
 * names (`USER_DAT.;1`); Joliet carries the real ones (`user-data`), which Linux and `isoinfo -J`
 * read (ECMA-119, and the Joliet specification's `%/@` escape for UCS-2 level 1).
 */

const SECTOR = 2048;
const FIRST_FILE_SECTOR = 25;

/** One file of the image's root directory. */
export interface IsoFile {
  /** The Joliet name (at most 64 characters). */
  name: string;
  data: Uint8Array;
}

/** What the image holds. */
export interface IsoImage {
  /** The volume identifier (`cidata` for NoCloud), at most 16 characters. */
  volumeId: string;
  files: readonly IsoFile[];
  /** Recorded as every timestamp of the image. */
  date: Date;
}

/**
 * @returns the image, a whole number of sectors
 * @throws Error on a name or volume id the format cannot carry
 */
export function buildIso9660(image: IsoImage): Buffer {
  if (!/^[\x20-\x7e]{1,16}$/.test(image.volumeId)) throw new Error('volume id must be 1-16 printable ASCII characters');
  const files = [...image.files].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const extents: Array<{ file: IsoFile; sector: number; primary: string }> = [];
  let sector = FIRST_FILE_SECTOR;
  const primaryNames = new Set<string>();
  for (const file of files) {
    if (!/^[^/\\\0]{1,64}$/.test(file.name)) throw new Error(`file name ${JSON.stringify(file.name)} is not usable`);
    const primary = levelOneName(file.name);
    if (primaryNames.has(primary)) throw new Error(`file names collide as ${primary}`);
    primaryNames.add(primary);
    extents.push({ file, sector, primary });
    sector += Math.max(1, sectorsFor(file.data.length));
  }
  const totalSectors = sector;
  const out = Buffer.alloc(totalSectors * SECTOR);
  const when = recordingDate(image.date);

  const rootRecord = (joliet: boolean) => directoryRecord(joliet ? 24 : 23, SECTOR, true, Buffer.from([0]), when);
  const directory = (joliet: boolean): Buffer => {
    const self = joliet ? 24 : 23;
    const records = [
      directoryRecord(self, SECTOR, true, Buffer.from([0]), when),
      directoryRecord(self, SECTOR, true, Buffer.from([1]), when),
      ...extents
        .slice()
        .sort((a, b) => Buffer.compare(nameBytes(a, joliet), nameBytes(b, joliet)))
        .map((e) => directoryRecord(e.sector, e.file.data.length, false, nameBytes(e, joliet), when)),
    ];
    const body = Buffer.concat(records);
    if (body.length > SECTOR) throw new Error('too many files for one directory sector');
    return body;
  };

  volumeDescriptor(out, 16, 1, image, totalSectors, rootRecord(false), 19, 20);
  volumeDescriptor(out, 17, 2, image, totalSectors, rootRecord(true), 21, 22);
  out.set([255, ...Buffer.from('CD001'), 1], 18 * SECTOR);
  pathTable(out, 19, 23, 'le');
  pathTable(out, 20, 23, 'be');
  pathTable(out, 21, 24, 'le');
  pathTable(out, 22, 24, 'be');
  directory(false).copy(out, 23 * SECTOR);
  directory(true).copy(out, 24 * SECTOR);
  for (const e of extents) out.set(e.file.data, e.sector * SECTOR);
  return out;
}

function nameBytes(e: { file: IsoFile; primary: string }, joliet: boolean): Buffer {
  return joliet ? ucs2be(e.file.name) : Buffer.from(e.primary, 'ascii');
}

function sectorsFor(bytes: number): number {
  return Math.ceil(bytes / SECTOR);
}

/** `user-data` → `USER_DAT.;1`: d-characters, 8.3, version 1. */
function levelOneName(name: string): string {
  const clean = (s: string, max: number) =>
    s
      .toUpperCase()
      .replace(/[^A-Z0-9_]/g, '_')
      .slice(0, max);
  const dot = name.lastIndexOf('.');
  const [base, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot + 1)] : [name, ''];
  return `${clean(base, 8)}.${clean(ext, 3)};1`;
}

function ucs2be(text: string): Buffer {
  const le = Buffer.from(text, 'utf16le');
  for (let i = 0; i < le.length; i += 2) le.set([le[i + 1] ?? 0, le[i] ?? 0], i);
  return le;
}

function both32(buf: Buffer, offset: number, value: number): void {
  buf.writeUInt32LE(value, offset);
  buf.writeUInt32BE(value, offset + 4);
}

function both16(buf: Buffer, offset: number, value: number): void {
  buf.writeUInt16LE(value, offset);
  buf.writeUInt16BE(value, offset + 2);
}

/** The 7-byte date of a directory record (UTC). */
function recordingDate(d: Date): Buffer {
  return Buffer.from([
    d.getUTCFullYear() - 1900,
    d.getUTCMonth() + 1,
    d.getUTCDate(),
    d.getUTCHours(),
    d.getUTCMinutes(),
    d.getUTCSeconds(),
    0,
  ]);
}

/** The 17-byte date of a volume descriptor (`YYYYMMDDHHMMSScc`, then the zone offset, UTC). */
function volumeDate(d: Date | undefined): Buffer {
  if (!d) return Buffer.concat([Buffer.from('0'.repeat(16), 'ascii'), Buffer.from([0])]);
  const iso = d.toISOString();
  const digits = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}${iso.slice(20, 22)}`;
  return Buffer.concat([Buffer.from(digits, 'ascii'), Buffer.from([0])]);
}

function directoryRecord(sector: number, length: number, isDir: boolean, name: Buffer, when: Buffer): Buffer {
  const size = 33 + name.length + (name.length % 2 === 0 ? 1 : 0);
  const rec = Buffer.alloc(size);
  rec[0] = size;
  both32(rec, 2, sector);
  both32(rec, 10, length);
  when.copy(rec, 18);
  rec[25] = isDir ? 2 : 0;
  both16(rec, 28, 1);
  rec[32] = name.length;
  name.copy(rec, 33);
  return rec;
}

/** A text field: ASCII padded with spaces, or UCS-2 padded with UCS-2 spaces (Joliet). */
function text(value: string, bytes: number, joliet: boolean): Buffer {
  if (!joliet) return Buffer.from(value.padEnd(bytes, ' '), 'ascii');
  const chars = Math.floor(bytes / 2);
  const out = Buffer.alloc(bytes, 0);
  ucs2be(value.slice(0, chars).padEnd(chars, ' ')).copy(out);
  return out;
}

function volumeDescriptor(
  out: Buffer,
  sector: number,
  type: 1 | 2,
  image: IsoImage,
  totalSectors: number,
  root: Buffer,
  lTable: number,
  mTable: number,
): void {
  const joliet = type === 2;
  const vd = Buffer.alloc(SECTOR);
  vd[0] = type;
  vd.write('CD001', 1, 'ascii');
  vd[6] = 1;
  text('', 32, joliet).copy(vd, 8);
  text(image.volumeId, 32, joliet).copy(vd, 40);
  both32(vd, 80, totalSectors);
  if (joliet) vd.write('%/@', 88, 'ascii');
  both16(vd, 120, 1);
  both16(vd, 124, 1);
  both16(vd, 128, SECTOR);
  both32(vd, 132, PATH_TABLE_BYTES);
  vd.writeUInt32LE(lTable, 140);
  vd.writeUInt32BE(mTable, 148);
  root.copy(vd, 156);
  for (const [offset, bytes] of [
    [190, 128],
    [318, 128],
    [446, 128],
    [574, 128],
    [702, 37],
    [739, 37],
    [776, 37],
  ] as const) {
    text('', bytes, joliet).copy(vd, offset);
  }
  volumeDate(image.date).copy(vd, 813);
  volumeDate(image.date).copy(vd, 830);
  volumeDate(undefined).copy(vd, 847);
  volumeDate(image.date).copy(vd, 864);
  vd[881] = 1;
  vd.copy(out, sector * SECTOR);
}

/** A path table with the root directory only: name length 1, the root's sector, parent 1, name 0. */
const PATH_TABLE_BYTES = 10;

function pathTable(out: Buffer, sector: number, rootSector: number, order: 'le' | 'be'): void {
  const at = sector * SECTOR;
  out[at] = 1;
  if (order === 'le') {
    out.writeUInt32LE(rootSector, at + 2);
    out.writeUInt16LE(1, at + 6);
  } else {
    out.writeUInt32BE(rootSector, at + 2);
    out.writeUInt16BE(1, at + 6);
  }
}
