/** A probe that stays on loopback, for backends whose test doubles hand out addresses off this machine. */
import { isIP } from 'node:net';
import { probeThroughProxy, type ProbeOptions, type ProbeResult } from '../../shared/probe/probe.js';

const isLoopback = (host: string) =>
  host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));

/**
 * Probes through the proxy like the relay does, but only at loopback addresses: tests talk to
 * loopback alone, and libvirt's test driver makes up guest addresses (192.168.122.x) that no guest
 * of ours serves. Any other address fails as an unreachable guest would, without a packet sent.
 */
export async function loopbackOnlyProbe(opts: ProbeOptions): Promise<ProbeResult> {
  if (isLoopback(opts.host)) return probeThroughProxy(opts);
  return {
    ok: false,
    latencyMs: 0,
    error: `not probed: ${opts.host} is not a loopback address (tests stay on loopback)`,
  };
}
