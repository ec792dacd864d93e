// The libvirt client against libvirtd's real storage driver: pools, qcow2 overlays on a backing file, byte-exact uploads.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chown, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setImmediate } from 'node:timers/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connect,
  ErrorCode,
  LibvirtCancelledError,
  type LibvirtConnection,
  LibvirtError,
  LibvirtTimeoutError,
  StoragePoolState,
  type StoragePoolRef,
  StorageVolType,
} from '../../relay/libvirt/index.js';
import { STREAM_CHUNK_MAX } from '../../relay/libvirt/packet.js';
import { type Libvirtd, startLibvirtd } from '../support/libvirtd.js';
import { rejection } from '../support/rejection.js';

const run = promisify(execFile);
const MiB = 1024 * 1024;

const volumeXml = (name: string, bytes: number, format: string, backing?: string): string => `<volume>
  <name>${name}</name>
  <capacity unit='bytes'>${bytes}</capacity>
  <target><format type='${format}'/></target>
  ${backing ? `<backingStore><path>${backing}</path><format type='qcow2'/></backingStore>` : ''}
</volume>`;

let daemon: Libvirtd;
let conn: LibvirtConnection;
let pool: StoragePoolRef;

beforeAll(async () => {
  daemon = await startLibvirtd();
  conn = await connect(daemon.storageUri);
  pool = await conn.lookupStoragePoolByName(daemon.poolName);
});

afterAll(async () => {
  await conn?.close();
  await daemon?.stop();
});

describe('libvirt client: storage driver', () => {
  it('looks up the pool and reports it running; a missing pool is NO_STORAGE_POOL', async () => {
    const info = await conn.getStoragePoolInfo(pool);
    expect(info.state).toBe(StoragePoolState.RUNNING);
    expect(info.capacity).toBeGreaterThan(0n);
    expect(await rejection(conn.lookupStoragePoolByName('nope'))).toMatchObject({ code: ErrorCode.NO_STORAGE_POOL });
  });

  it('creates a qcow2 overlay whose backing file is a base image found by a pool refresh', async () => {
    const basePath = join(daemon.poolDir, 'base.qcow2');
    await run('qemu-img', ['create', '-q', '-f', 'qcow2', basePath, '64M']);
    await chown(basePath, 65534, 65534);
    expect(await rejection(conn.lookupStorageVolByName(pool, 'base.qcow2'))).toMatchObject({
      code: ErrorCode.NO_STORAGE_VOL,
    });
    await conn.refreshStoragePool(pool);
    const base = await conn.lookupStorageVolByName(pool, 'base.qcow2');
    expect(await conn.getStorageVolPath(base)).toBe(basePath);

    const overlay = await conn.createStorageVol(pool, volumeXml('vm-1.qcow2', 64 * MiB, 'qcow2', basePath));
    expect(overlay).toMatchObject({ pool: daemon.poolName, name: 'vm-1.qcow2' });
    const overlayPath = await conn.getStorageVolPath(overlay);
    const { stdout } = await run('qemu-img', ['info', '--output=json', overlayPath]);
    expect(JSON.parse(stdout)).toMatchObject({
      format: 'qcow2',
      'virtual-size': 64 * MiB,
      'backing-filename': basePath,
    });
    expect(await conn.getStorageVolInfo(overlay)).toMatchObject({
      type: StorageVolType.FILE,
      capacity: BigInt(64 * MiB),
    });
    await conn.deleteStorageVol(overlay);
    expect(await rejection(conn.lookupStorageVolByName(pool, 'vm-1.qcow2'))).toMatchObject({
      code: ErrorCode.NO_STORAGE_VOL,
    });
  });

  it('uploads a buffer spanning many stream packets byte-exactly', async () => {
    const data = randomBytes(5 * STREAM_CHUNK_MAX + 12_345);
    const vol = await conn.createStorageVol(pool, volumeXml('seed.img', data.length, 'raw'));
    await conn.uploadStorageVol(vol, data);
    expect((await readFile(await conn.getStorageVolPath(vol))).equals(data)).toBe(true);
    await conn.deleteStorageVol(vol);
  });

  it('uploads chunks from an async source, at an offset, byte-exactly', async () => {
    const chunks = [randomBytes(1000), randomBytes(3 * MiB), randomBytes(7)];
    const total = chunks.reduce((sum, c) => sum + c.length, 0);
    const vol = await conn.createStorageVol(pool, volumeXml('chunks.img', total + 4096, 'raw'));
    async function* source(): AsyncGenerator<Uint8Array> {
      for (const chunk of chunks) {
        await setImmediate(); // each chunk comes on a later turn of the event loop, not at once
        yield chunk;
      }
    }
    await conn.uploadStorageVol(vol, source(), { offset: 4096n, length: BigInt(total) });
    const onDisk = await readFile(await conn.getStorageVolPath(vol));
    expect(onDisk.subarray(0, 4096).equals(Buffer.alloc(4096))).toBe(true);
    expect(onDisk.subarray(4096).equals(Buffer.concat(chunks))).toBe(true);
    await conn.deleteStorageVol(vol);
  });

  it('reports the daemon’s error for an upload to a volume that is gone', async () => {
    const vol = await conn.createStorageVol(pool, volumeXml('gone.img', 4096, 'raw'));
    await conn.deleteStorageVol(vol);
    const error = await rejection(conn.uploadStorageVol(vol, randomBytes(4096)));
    expect(error).toBeInstanceOf(LibvirtError);
    expect(error).toMatchObject({ code: ErrorCode.NO_STORAGE_VOL, procedure: 'STORAGE_VOL_UPLOAD' });
  });

  it('aborts an upload on cancellation or timeout and keeps the connection usable', async () => {
    const vol = await conn.createStorageVol(pool, volumeXml('slow.img', MiB, 'raw'));
    let release = (): void => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    /** One chunk, then it hangs (until the end of the test): `firstTaken` once the upload asks for more. */
    async function* slow(firstTaken = (): void => {}): AsyncGenerator<Uint8Array> {
      yield randomBytes(4096);
      firstTaken();
      await released;
      yield randomBytes(4096);
    }
    let firstTaken = (): void => {};
    const midway = new Promise<void>((resolve) => (firstTaken = resolve));
    const controller = new AbortController();
    const cancelled = rejection(conn.uploadStorageVol(vol, slow(firstTaken), { signal: controller.signal }));
    await midway; // the daemon accepted the upload and its first chunk went out
    controller.abort();
    expect(await cancelled).toBeInstanceOf(LibvirtCancelledError);
    expect(await rejection(conn.uploadStorageVol(vol, slow(), { timeoutMs: 200 }))).toBeInstanceOf(LibvirtTimeoutError);
    release();
    // The daemon dropped both partial uploads: a full one afterwards succeeds on the same connection.
    const data = randomBytes(MiB);
    await conn.uploadStorageVol(vol, data);
    expect((await readFile(await conn.getStorageVolPath(vol))).equals(data)).toBe(true);
    await conn.deleteStorageVol(vol);
    expect(conn.closed).toBe(false);
  });
});
