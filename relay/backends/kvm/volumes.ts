/** The kvm backend's volumes: each instance's qcow2 overlay of the base image and its NoCloud seed. */
import { RetryableError } from '../../../shared/errors.js';
import { backendCall } from '../../../shared/telemetry/spans.js';
import type { KvmBackendConfig } from './options.js';
import { ErrorCode, isLibvirtError, type LibvirtConnection, type StoragePoolRef } from '../../libvirt/index.js';
import { overlayVolumeXml, seedVolumeXml, volumeNames } from './domain-xml.js';
import { attrs, ignoring, type KvmHosts } from './hosts.js';

const GIB = 1024n * 1024n * 1024n;

/**
 * A fresh overlay and seed for instance `name` on `host`: leftovers of an earlier attempt (no
 * domain) are removed first. The overlay is as large as the size's `diskGiB`, never smaller than
 * the base image.
 */
export async function createVolumes(
  hosts: KvmHosts,
  config: KvmBackendConfig,
  target: { host: string; name: string; size: string | undefined },
  image: Buffer,
): Promise<void> {
  const { host, name, size } = target;
  const hostConfig = hosts.hostConfig(host);
  const { conn, pool } = await hosts.storagePool(host);
  const names = volumeNames(name);
  await deleteVolumes(conn, pool, host, name);
  const base = await conn.lookupStorageVolByName(pool, hostConfig.baseImage).catch((err: unknown) => {
    if (isLibvirtError(err, ErrorCode.NO_STORAGE_VOL))
      throw new RetryableError(
        `base image ${hostConfig.baseImage} is not in pool ${hostConfig.pool} on host ${host}`,
        60_000,
        { cause: err },
      );
    throw err;
  });
  const [basePath, baseInfo] = await Promise.all([conn.getStorageVolPath(base), conn.getStorageVolInfo(base)]);
  const diskGiB = size ? config.sizes[size]?.diskGiB : undefined;
  const wanted = diskGiB === undefined ? 0n : BigInt(diskGiB) * GIB;
  const capacity = wanted > baseInfo.capacity ? wanted : baseInfo.capacity;
  await backendCall('libvirt.storageVolCreateXML', attrs(host, name), () =>
    conn.createStorageVol(pool, overlayVolumeXml(names.overlay, capacity, basePath, hostConfig.baseImageFormat)),
  );
  const seed = await backendCall('libvirt.storageVolCreateXML', attrs(host, name), () =>
    conn.createStorageVol(pool, seedVolumeXml(names.seed, image.length)),
  );
  await backendCall('libvirt.storageVolUpload', { ...attrs(host, name), 'libvirt.bytes': image.length }, () =>
    conn.uploadStorageVol(seed, image, { length: BigInt(image.length) }),
  );
}

/** Removes the instance's volumes that exist (none is fine). */
export async function deleteVolumes(
  conn: LibvirtConnection,
  pool: StoragePoolRef,
  host: string,
  name: string,
): Promise<void> {
  for (const volume of Object.values(volumeNames(name))) {
    const vol = await ignoring(conn.lookupStorageVolByName(pool, volume), ErrorCode.NO_STORAGE_VOL);
    if (!vol) continue;
    await backendCall('libvirt.storageVolDelete', attrs(host, name), () =>
      ignoring(conn.deleteStorageVol(vol), ErrorCode.NO_STORAGE_VOL),
    );
  }
}
