/**
 * A libvirt "host" for kvm backend tests: a real libvirtd (`startLibvirtd`) whose test driver runs
 * the domains and whose storage driver holds a real `dir` pool with a qcow2 base image. One
 * connection to the test driver is held for the whole run (its state lives only while a
 * connection is open); it doubles as the out-of-band client (destroying a domain behind the
 * backend's back).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { connect, type LibvirtConnection } from '../../relay/libvirt/index.js';
import { startLibvirtd, type Libvirtd } from './libvirtd.js';

const run = promisify(execFile);

/** The base image every overlay is backed by (an empty qcow2: the test driver boots nothing). */
export const BASE_IMAGE = 'base.qcow2';

export interface KvmHost {
  daemon: Libvirtd;
  /** The held connection to the test driver, for out-of-band changes and checks. */
  domains: LibvirtConnection;
  /** The relay config entry of this host (test driver for domains, the storage driver's pool). */
  hostConfig(): Record<string, unknown>;
  /** Runs `virsh -c <test driver> <args>` (operations the client has no call for, like suspend). */
  virsh(...args: string[]): Promise<string>;
  close(): Promise<void>;
}

export async function startKvmHost(): Promise<KvmHost> {
  const daemon = await startLibvirtd();
  try {
    await run('virsh', [
      '-c',
      daemon.storageUri,
      'vol-create-as',
      daemon.poolName,
      BASE_IMAGE,
      '64M',
      '--format',
      'qcow2',
    ]);
    const domains = await connect(daemon.testUri);
    return {
      daemon,
      domains,
      hostConfig: () => ({
        uri: daemon.testUri,
        storageUri: daemon.storageUri,
        pool: daemon.poolName,
        baseImage: BASE_IMAGE,
        network: 'default',
        domainType: 'test',
        // The test driver runs no guest: there is no agent to say anything.
        readySignal: 'none',
      }),
      virsh: async (...args) => (await run('virsh', ['-c', daemon.testUri, ...args], { encoding: 'utf8' })).stdout,
      async close() {
        await domains.close().catch(() => undefined);
        await daemon.stop();
      },
    };
  } catch (err) {
    await daemon.stop();
    throw err;
  }
}
