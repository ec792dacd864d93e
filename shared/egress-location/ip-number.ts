/** An IP address as the number the range databases key on: IPv4 as 32 bits, IPv6 as 128 (an IPv4-mapped IPv6 address as its IPv4). */
import { isIPv4, isIPv6 } from 'node:net';

/** An address's family and its value, or undefined when `ip` is not an IP address. */
export interface IpNumber {
  family: 4 | 6;
  value: bigint;
  /** The address as written for lookups: dotted for IPv4 (also when it came IPv4-mapped). */
  text: string;
}

function ipv4Value(ip: string): bigint {
  return ip.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

/** The eight 16-bit groups of a valid IPv6 address (`::` expanded, a dotted IPv4 tail as two groups). */
function ipv6Groups(ip: string): number[] {
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(ip)?.[1];
  const text = tail ? ip.slice(0, -tail.length) + 'x:x' : ip;
  const [head = '', rest] = text.split('::');
  const parse = (s: string) => (s === '' ? [] : s.split(':'));
  const left = parse(head);
  const right = rest === undefined ? [] : parse(rest);
  const groups = [...left, ...new Array<string>(8 - left.length - right.length).fill('0'), ...right];
  const v4 = tail ? Number(ipv4Value(tail)) : 0;
  return groups.map((g, i) => (g !== 'x' ? parseInt(g, 16) : i === 6 ? v4 >>> 16 : v4 & 0xffff));
}

/** A 32-bit value as a dotted IPv4 address. */
export function ipv4Text(value: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 0xffn)).join('.');
}

/**
 * @example
 * ipNumber('1.0.0.1') // { family: 4, value: 16777217n, text: '1.0.0.1' }
 * ipNumber('::ffff:1.0.0.1') // the same
 */
export function ipNumber(ip: string): IpNumber | undefined {
  if (isIPv4(ip)) return { family: 4, value: ipv4Value(ip), text: ip };
  if (!isIPv6(ip)) return undefined;
  const value = ipv6Groups(ip.replace(/%.*$/, '')).reduce((acc, g) => (acc << 16n) | BigInt(g), 0n);
  // ::ffff:a.b.c.d is an IPv4 address seen through an IPv6 socket.
  if (value >> 32n === 0xffffn) {
    const v4 = value & 0xffffffffn;
    return { family: 4, value: v4, text: ipv4Text(v4) };
  }
  return { family: 6, value, text: ip };
}
