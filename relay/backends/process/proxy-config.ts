/** The argv markers of the process backend's tinyproxy processes, and a proxy's source address. */
import { isIP } from 'node:net';

/**
 * The argv markers that identify a proxy process as ours: the instance name and the state
 * directory. Checked in `/proc/<pid>/cmdline` so a recycled pid never counts as ours.
 * (`process.title` is not used: on Linux it overwrites the argv area and would erase them.)
 */
export function markerArgs(name: string, stateDir: string): [string, string] {
  return [`--egress-proxy=${name}`, stateMarker(stateDir)];
}

/** The argv markers of a provider's forwarder (`forwarder.ts`) in `stateDir`. */
export function forwarderMarkers(provider: string, stateDir: string): [string, string] {
  return [`--egress-forwarder=${provider}`, stateMarker(stateDir)];
}

/** The marker every process started for `stateDir` carries, whatever its name. */
export function stateMarker(stateDir: string): string {
  return `--egress-state=${stateDir}`;
}

/**
 * The source address for outgoing connections: the bind address when it is a specific, routable
 * one (a host with several egress IPs). A loopback or wildcard bind leaves the choice to the OS,
 * otherwise a proxy bound to 127.0.0.1 could reach nothing but the host itself.
 */
export function egressAddress(host: string): string | undefined {
  if (isIP(host) === 0) return undefined;
  if (host === '0.0.0.0' || host === '::' || host === '::1' || host.startsWith('127.')) return undefined;
  return host;
}
