/** `node dist/relay/host-groups.js CONFIG`: the groups of `hostGroups`, one a line, for install.sh; exit 1 naming a bad field. */
import { loadRelayConfig } from './config.js';
import { hostGroups } from './host-groups.js';

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: host-groups.js /etc/egress-relay/config.yaml\n');
  process.exit(2);
}
try {
  // Only the file: the unit's environment overrides do not change which sockets the config names.
  const groups = hostGroups(loadRelayConfig({ EGRESS_RELAY_CONFIG: file }));
  process.stdout.write(groups.map((g) => `${g}\n`).join(''));
} catch (err) {
  process.stderr.write(`${file}: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
