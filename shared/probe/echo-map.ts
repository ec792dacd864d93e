/**
 * The local echo endpoint's map from loopback source addresses to public-looking ones. Locally every
 * proxy leaves from 127.x, which no location database places; the map makes the whole path (probe,
 * lookup, `EgressVerified`, discovery filters) run on one machine. Documentation addresses (RFC 5737)
 * would not do: a database has no country for 192.0.2.0/24, and the packaged one even places
 * 198.51.100.0/24 and 203.0.113.0/24 in AU. Only a local stack passes a map; the deployed echo
 * (infra/echo/main.ts) always answers the address it saw; it is bundled with nothing but `node:`,
 * so this file imports nothing else (the stack parses the map: infra/local/echo-map.ts).
 */
import { ipNumber, ipv4Text } from '../egress-location/ip-number.js';

/** One rule: addresses of `from` (a loopback IPv4 range) answer as the address at the same offset from `to`. */
export interface EchoMapping {
  from: { base: bigint; prefix: number };
  to: bigint;
}

/** Whether `value` lies in the range. */
export const inRange = (value: bigint, r: { base: bigint; prefix: number }) =>
  value >> BigInt(32 - r.prefix) === r.base >> BigInt(32 - r.prefix);

/** The address the echo answers for `ip`: mapped by the first rule whose range holds it, else `ip`. */
export function mapSource(map: readonly EchoMapping[], ip: string): string {
  const n = ipNumber(ip);
  const rule = n?.family === 4 ? map.find((r) => inRange(n.value, r.from)) : undefined;
  if (!n || !rule) return ip;
  return ipv4Text(rule.to + (n.value - rule.from.base));
}
