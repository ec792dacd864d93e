/**
 * Egress addresses for the process backend: each proxy gets its own source address from the
 * provider's range (`egressAddresses`, e.g. `127.1.0.0/16`), handed out round-robin from a cursor
 * kept in the state directory, so a fresh instance (a replacement after a ban) never gets the
 * address its predecessor had while the range has another free one.
 */
import { readFile } from 'node:fs/promises';
import { isIPv4 } from 'node:net';
import path from 'node:path';
import { QuotaExceededError } from '../../../shared/errors.js';
import { writeFileAtomic } from '../../atomic-file.js';
import { KeyedSerializer } from '../../keyed-serializer.js';

/** An IPv4 range in CIDR notation, parsed. */
export interface Ipv4Range {
  /** The first address as an unsigned 32-bit number. */
  base: number;
  /** How many addresses it holds. */
  size: number;
}

const toNumber = (ip: string) => ip.split('.').reduce((n, part) => n * 256 + Number(part), 0);
const toIp = (n: number) => [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join('.');

/**
 * Parses `a.b.c.d/len` (IPv4; 8 ≤ len ≤ 32; the address must be the range's first; a loopback
 * range needs at least 4 addresses, since its first is its forwarder's, see `forwarder.ts`).
 *
 * @returns the range, or a reason it is not one
 */
export function parseIpv4Range(cidr: string): Ipv4Range | string {
  const [ip, bits, ...rest] = cidr.split('/');
  const prefix = Number(bits);
  if (rest.length > 0 || ip === undefined || !isIPv4(ip) || !/^\d+$/.test(bits ?? ''))
    return 'must be IPv4 CIDR like 127.1.0.0/16';
  if (prefix < 8 || prefix > 32) return 'the prefix length must be 8 to 32';
  const size = 2 ** (32 - prefix);
  const base = toNumber(ip);
  if (base % size !== 0) return `${ip} is not the first address of a /${prefix}`;
  if (isLoopback({ base, size }) && prefix > 30)
    return "a loopback range needs a prefix of /30 or shorter (its first address is its forwarder's)";
  return { base, size };
}

/** Whether a range lies in 127.0.0.0/8, where a socket bound to one of its addresses reaches only this host. */
export function isLoopback(range: Ipv4Range): boolean {
  return Math.floor(range.base / 2 ** 24) === 127;
}

/** Where the forwarder of a loopback range listens: its first address, which no proxy is given. */
export function forwarderHost(range: Ipv4Range): string {
  return toIp(range.base);
}

/** Whether `ip` lies in `range`. */
export function inRange(range: Ipv4Range, ip: string): boolean {
  if (!isIPv4(ip)) return false;
  const n = toNumber(ip);
  return n >= range.base && n < range.base + range.size;
}

/** Usable offsets of a range: a range of more than two leaves out its network and broadcast addresses. */
function usable(range: Ipv4Range): [number, number] {
  return range.size > 2 ? [1, range.size - 2] : [0, range.size - 1];
}

/** Hands out egress addresses of one provider's range; one allocation at a time. */
export class EgressAllocator {
  private readonly serial = new KeyedSerializer();
  private readonly reserved = new Set<string>();

  /**
   * @param range - the provider's range
   * @param cursorPath - where the next offset is kept (`<stateDir>/egress-<provider>.json`)
   */
  constructor(
    private readonly range: Ipv4Range,
    private readonly cursorPath: string,
  ) {}

  /**
   * Reserves an address: `preferred` when it is in the range and free (a restarted instance keeps
   * its address), otherwise the next free one after the cursor.
   *
   * @param taken - addresses our other instances hold (read under the allocation lock)
   * @throws QuotaExceededError when every address of the range is taken
   */
  reserve(taken: () => Promise<Set<string>>, preferred?: string): Promise<string> {
    return this.serial.run('egress', async () => {
      const used = await taken();
      const free = (ip: string) => !used.has(ip) && !this.reserved.has(ip);
      if (preferred !== undefined && inRange(this.range, preferred) && free(preferred)) {
        this.reserved.add(preferred);
        return preferred;
      }
      const [first, last] = usable(this.range);
      const count = last - first + 1;
      const start = (await this.cursor()) % count;
      for (let i = 0; i < count; i++) {
        const offset = (start + i) % count;
        const ip = toIp(this.range.base + first + offset);
        if (!free(ip)) continue;
        this.reserved.add(ip);
        await writeFileAtomic(this.cursorPath, `${JSON.stringify({ next: (offset + 1) % count })}\n`);
        return ip;
      }
      throw new QuotaExceededError(
        `no free egress address in ${toIp(this.range.base)}/${32 - Math.log2(this.range.size)}`,
      );
    });
  }

  /** Ends a reservation (the state file now records the address, or the create failed). */
  release(ip: string): void {
    this.reserved.delete(ip);
  }

  private async cursor(): Promise<number> {
    try {
      const next: unknown = (JSON.parse(await readFile(this.cursorPath, 'utf8')) as { next?: unknown }).next;
      return typeof next === 'number' && Number.isInteger(next) && next >= 0 ? next : 0;
    } catch {
      // Missing or unreadable: start at the beginning (addresses in use are still skipped).
      return 0;
    }
  }
}

/** The cursor file of a provider in a state directory. */
export function cursorPath(stateDir: string, provider: string): string {
  return path.join(stateDir, `egress-${provider}.json`);
}
