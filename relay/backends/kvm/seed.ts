/**
 * The NoCloud seed of a kvm guest: `user-data` installs tinyproxy (configured with the proxy's
 * port and credentials, fenced by the backend's egress policy) and the QEMU guest agent; `meta-data` names the instance. Both go into an
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
 * @throws PermanentError on `credentials` tinyproxy's config grammar cannot carry
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
 * The `#cloud-config` document: tinyproxy and the guest agent (the third source of the guest's
 * address) installed, the proxy configuration and the fence written after the package (`defer`,
 * when the `tinyproxy` user exists), the fence loaded, then both services enabled and restarted, and last the marker that
 * tells the backend the proxy serves (`readiness.ts`).
 */
function buildUserData(input: SeedInput): string {
  const doc = {
    package_update: true,
    packages: ['tinyproxy', 'qemu-guest-agent', 'nftables'],
    write_files: [tinyproxyConfigFile(input), fenceFile(input.egress)],
    runcmd: [
      enableUnitCommand('qemu-guest-agent', { now: true }),
      ...fenceCommands(),
      enableUnitCommand('tinyproxy'),
      ['systemctl', 'restart', 'tinyproxy'],
      readyMarkerCommand(input.instance, input.port),
    ],
  };
  return `#cloud-config\n# egress proxy ${input.proxy} (instance ${input.instance}), written by the kvm relay backend\n${stringify(doc)}`;
}
