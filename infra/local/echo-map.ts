/** The local stack's echo map (`EGRESS_ECHO_MAP`, shared/probe/echo-map.ts): parsed once, errors naming the variable. */
import { ValidationError } from '../../shared/errors.js';
import { ipNumber } from '../../shared/egress-location/ip-number.js';
import { inRange, type EchoMapping } from '../../shared/probe/echo-map.js';

/**
 * The default map: the local relay's `local` provider leaves from 127.1.0.0/16, answered as
 * 17.0.0.0/16 (Apple, US, AS714), and `local-b` from 127.2.0.0/16, answered as 5.9.0.0/16 (Hetzner,
 * DE, AS24940): whole /16s that the packaged database places in one country and one AS, so every
 * local proxy keeps a distinct egress address with a known country.
 */
export const DEFAULT_ECHO_MAP = '127.1.0.0/16=17.0.0.0,127.2.0.0/16=5.9.0.0';

const LOOPBACK = { base: 127n << 24n, prefix: 8 };

/**
 * Parses `FROM/PREFIX=TO,…`: addresses of FROM answer as the address at the same offset from TO.
 *
 * @throws ValidationError naming `field` when a rule is malformed or maps a range outside 127.0.0.0/8
 */
export function parseEchoMap(text: string, field = 'EGRESS_ECHO_MAP'): EchoMapping[] {
  return text
    .split(',')
    .filter((rule) => rule.trim() !== '')
    .map((rule) => {
      const m = /^\s*([\d.]+)\/(\d{1,2})=([\d.]+)\s*$/.exec(rule);
      const from = m ? ipNumber(m[1] ?? '') : undefined;
      const to = m ? ipNumber(m[3] ?? '') : undefined;
      const prefix = Number(m?.[2]);
      if (!from || !to || from.family !== 4 || to.family !== 4 || prefix < 8 || prefix > 32)
        throw new ValidationError(field, `${JSON.stringify(rule)} is not FROM/PREFIX=TO with IPv4 addresses`);
      if (!inRange(from.value, LOOPBACK))
        throw new ValidationError(field, `${JSON.stringify(rule)}: only loopback sources (127.0.0.0/8) may be mapped`);
      const mask = (1n << BigInt(32 - prefix)) - 1n;
      return { from: { base: from.value & ~mask, prefix }, to: to.value & ~mask };
    });
}
