/** The host groups the relay's user joins for what its config names: `install.sh` adds it to them. */
import type { RelayConfig } from './config.js';
import { parseLibvirtUri } from './libvirt/index.js';

/**
 * The group that may use the local libvirt daemon's read-write socket: Debian and Ubuntu make the
 * socket root:libvirt 0660, Fedora and RHEL leave it to a polkit rule for the same group. polkit
 * asks the group database, not the process, so the user must be a member there (a unit's
 * `SupplementaryGroups=` alone would not pass it).
 */
export const LIBVIRT_GROUP = 'libvirt';

/** Does `uri` name the system daemon of this host over its unix socket (`qemu:///system`)? */
function isLocalSystemDaemon(uri: string): boolean {
  return parseLibvirtUri(uri).transport === 'unix' && new URL(uri).pathname === '/system';
}

/**
 * The groups the relay's user must be a member of: `libvirt` when a `kvm` backend has a host (or
 * its storage) on this host's `/system` socket; none for `process` backends and remote hosts
 * (ssh, TLS and TCP need only files and the network).
 *
 * @param config - the validated relay configuration
 * @returns the group names: none, or `libvirt`
 */
export function hostGroups(config: Pick<RelayConfig, 'backends'>): string[] {
  const local = config.backends.some(
    (b) =>
      b.type === 'kvm' &&
      Object.values(b.hosts).some((h) => [h.uri, h.storageUri].some((u) => u !== undefined && isLocalSystemDaemon(u))),
  );
  return local ? [LIBVIRT_GROUP] : [];
}
