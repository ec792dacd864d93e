/**
 * The NoCloud seed of a kvm guest: `user-data` installs tinyproxy (configured with the proxy's
 * port and credentials, fenced by the backend's egress policy, behind a stunnel TLS listener on the
 * next port) and the QEMU guest agent; `meta-data` names the instance. Both go into an
 * ISO 9660 image labelled `cidata`, which cloud-init's NoCloud datasource finds by its label.
 */
import { stringify } from 'yaml';
import type { EgressPolicy } from '../../../shared/config/egress-policy.js';
import {
  enableUnitCommand,
  fenceCommands,
  fenceFile,
  tinyproxyConfigFile,
} from '../../../shared/providers/tinyproxy.js';
import { guestStunnelCommands, guestStunnelFiles, guestTlsPort } from '../../../shared/providers/stunnel.js';
import { buildIso9660 } from './iso9660.js';
import { readyMarkerCommand } from './readiness.js';

/** The volume label NoCloud looks for. */
export const SEED_LABEL = 'cidata';

export interface SeedInput {
  instance: string;
  proxy: string;
  port: number;
  credentials: { username: string; password: string };
  /** The backend's egress policy, enforced in the guest (`fenceFile`). */
  egress: EgressPolicy;
  /** The instance's createdAt (ms): recorded as the image's date, so equal input gives equal bytes. */
  createdAt: number;
}

export interface Seed {
  userData: string;
  metaData: string;
  /** The ISO 9660 image to upload. */
  image: Buffer;
}

/**
 * @throws PermanentError on `credentials` tinyproxy's config grammar cannot carry, or a `port`
 *   that leaves no TLS port
 */
export function buildSeed(input: SeedInput): Seed {
  const userData = buildUserData(input);
  const metaData = `instance-id: ${input.instance}\nlocal-hostname: ${input.instance}\n`;
  const image = buildIso9660({
    volumeId: SEED_LABEL,
    date: new Date(input.createdAt),
    files: [
      { name: 'user-data', data: Buffer.from(userData, 'utf8') },
      { name: 'meta-data', data: Buffer.from(metaData, 'utf8') },
    ],
  });
  return { userData, metaData, image };
}

/**
 * The `#cloud-config` document: tinyproxy, stunnel and the guest agent (the third source of the
 * guest's address) installed, the proxy configuration, the fence and the TLS listener written after
 * the packages (`defer`, when their users exist), the fence loaded, then the services enabled and
 * restarted (the listener with a certificate made on the guest), and last the marker that tells the
 * backend the proxy and its TLS listener serve (`readiness.ts`).
 */
function buildUserData(input: SeedInput): string {
  const doc = {
    package_update: true,
    packages: ['tinyproxy', 'qemu-guest-agent', 'nftables', 'stunnel4', 'openssl'],
    write_files: [tinyproxyConfigFile(input), fenceFile(input.egress), ...guestStunnelFiles(input.port)],
    runcmd: [
      enableUnitCommand('qemu-guest-agent', { now: true }),
      ...fenceCommands(),
      enableUnitCommand('tinyproxy'),
      ['systemctl', 'restart', 'tinyproxy'],
      ...guestStunnelCommands(),
      readyMarkerCommand(input.instance, input.port, guestTlsPort(input.port)),
    ],
  };
  return `#cloud-config\n# egress proxy ${input.proxy} (instance ${input.instance}), written by the kvm relay backend\n${stringify(doc)}`;
}
