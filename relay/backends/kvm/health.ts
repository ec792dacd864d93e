/** The kvm backend's health check: per host, the daemon answers, the pool is active and holds the base image. */
import { performance } from 'node:perf_hooks';
import type { ProviderHealth } from '../../../shared/providers/contract.js';
import { ErrorCode, isLibvirtError, StoragePoolState } from '../../libvirt/index.js';
import { message, type KvmHosts } from './hosts.js';

/** Checks every host; the provider is ok when all are. */
export async function checkHosts(hosts: KvmHosts): Promise<ProviderHealth> {
  const started = performance.now();
  const names = hosts.names();
  const results = await Promise.all(
    names.map(async (host): Promise<[string, { ok: boolean; message: string }]> => {
      try {
        return [host, { ok: true, message: await hosts.onHost(host, () => checkHost(hosts, host)) }];
      } catch (err) {
        return [host, { ok: false, message: message(err) }];
      }
    }),
  );
  const detail = Object.fromEntries(results);
  const bad = results.filter(([, r]) => !r.ok);
  return {
    ok: bad.length === 0,
    message:
      bad.length === 0 ? `${names.length} host(s) ok` : bad.map(([host, r]) => `${host}: ${r.message}`).join('; '),
    latencyMs: Math.round(performance.now() - started),
    detail,
  };
}

async function checkHost(hosts: KvmHosts, host: string): Promise<string> {
  const config = hosts.hostConfig(host);
  const daemon = await hosts.connection(host);
  await hosts.call('libvirt.connectGetLibVersion', host, '', () => daemon.getLibVersion());
  const { conn, pool } = await hosts.storagePool(host);
  const info = await hosts.call('libvirt.storagePoolGetInfo', host, '', () => conn.getStoragePoolInfo(pool));
  if (info.state !== StoragePoolState.RUNNING) throw new Error(`pool ${config.pool} is not active`);
  await hosts
    .call('libvirt.storageVolLookupByName', host, '', () => conn.lookupStorageVolByName(pool, config.baseImage))
    .catch((err: unknown) => {
      if (isLibvirtError(err, ErrorCode.NO_STORAGE_VOL))
        throw new Error(`base image ${config.baseImage} is not in pool ${config.pool}`);
      throw err;
    });
  return `pool ${config.pool} active, ${info.available / (1024n * 1024n)} MiB free`;
}
