/** How a domain's libvirt state and addresses become an instance's state and IP. */
import type { InstanceState } from '../../../shared/providers/contract.js';
import { AddressSource, AddressType, DomainState, isLibvirtError, type DomainInterface } from '../../libvirt/index.js';

/** States in which the domain exists as a guest (running or held) and may have an address. */
const ACTIVE = new Set<number>([DomainState.RUNNING, DomainState.BLOCKED, DomainState.PAUSED, DomainState.PMSUSPENDED]);

/** True for running, blocked, paused and pmsuspended: a guest that is there, whether or not it serves. */
export function isActive(state: number): boolean {
  return ACTIVE.has(state);
}

/**
 * The domain state as the contract sees it:
 * - running, blocked (waiting on a host resource), paused and pmsuspended are the guest's own
 *   business: Running when the guest has an address, so the relay's probes judge whether it
 *   serves (a guest paused for good fails them and is replaced as Unhealthy); Pending while
 *   no address is known yet (booting, DHCP not done).
 * - nostate: Pending.
 * - shutdown (shutting down) and shutoff: Stopped. crashed: Terminated. Both are replaced.
 */
export function instanceState(state: number, hasAddress: boolean): InstanceState {
  if (isActive(state)) return hasAddress ? 'Running' : 'Pending';
  switch (state) {
    case DomainState.SHUTDOWN:
    case DomainState.SHUTOFF:
      return 'Stopped';
    case DomainState.CRASHED:
      return 'Terminated';
    default:
      return 'Pending';
  }
}

/**
 * Where the guest's address is looked up, in this order: libvirt's DHCP leases (networks libvirt
 * runs), then the host's ARP table (bridged guests libvirt hands no lease to), then the guest agent
 * (installed by the seed; answers once the guest has booted). The first source that yields an
 * IPv4 address wins; a source libvirt refuses (no agent yet, not supported) is skipped, while a
 * connection failure propagates (it says nothing about the guest).
 */
export const ADDRESS_SOURCES = [
  { name: 'lease', source: AddressSource.LEASE },
  { name: 'arp', source: AddressSource.ARP },
  { name: 'agent', source: AddressSource.AGENT },
] as const;

/** Where an address came from. */
export type AddressSourceName = (typeof ADDRESS_SOURCES)[number]['name'];

/**
 * @param lookup - `virDomainInterfaceAddresses` from one source
 * @returns the first IPv4 address (not loopback) in source order, or undefined
 */
export async function firstAddress(
  lookup: (source: number) => Promise<DomainInterface[]>,
): Promise<{ ip: string; from: AddressSourceName } | undefined> {
  for (const { name, source } of ADDRESS_SOURCES) {
    let interfaces: DomainInterface[];
    try {
      interfaces = await lookup(source);
    } catch (err) {
      if (isLibvirtError(err)) continue;
      throw err;
    }
    for (const iface of interfaces) {
      const address = iface.addrs.find((a) => a.type === AddressType.IPV4 && !a.addr.startsWith('127.'));
      if (address) return { ip: address.addr, from: name };
    }
  }
  return undefined;
}
