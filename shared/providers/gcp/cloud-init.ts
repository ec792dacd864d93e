/** The cloud-init user-data that turns a fresh VM into an authenticating tinyproxy on the proxy port. */
import { stringify } from 'yaml';
import { tinyproxyConfigFile } from '../tinyproxy.js';

/**
 * The guest attribute the VM sets once tinyproxy serves with its configuration (value: the port).
 * RUNNING only means the kernel booted; until this is set the provider reports the VM Pending, so
 * probes never count the minute cloud-init needs as failures.
 */
export const READY_ATTRIBUTE = 'egress/ready';
const METADATA_URL = 'http://metadata.google.internal/computeMetadata/v1/instance/guest-attributes';

export interface UserDataInput {
  instance: string;
  proxy: string;
  port: number;
  credentials: { username: string; password: string };
}

/**
 * The `user-data` metadata value (cloud-init reads it on GCE). The package is installed first; the
 * configuration is written after it (`defer`), when the `tinyproxy` group exists; then the service
 * is restarted with it and the VM reports itself ready through a guest attribute.
 *
 * @throws PermanentError on `credentials` the proxy's config grammar cannot carry
 */
export function buildUserData(input: UserDataInput): string {
  const doc = {
    package_update: true,
    packages: ['tinyproxy'],
    write_files: [tinyproxyConfigFile(input.port, input.credentials)],
    runcmd: [
      ['systemctl', 'enable', 'tinyproxy'],
      [
        'sh',
        '-c',
        `systemctl restart tinyproxy && curl -sf -X PUT --data ${input.port} -H 'Metadata-Flavor: Google' ${METADATA_URL}/${READY_ATTRIBUTE}`,
      ],
    ],
  };
  return `#cloud-config\n# egress proxy ${input.proxy} (instance ${input.instance}), written by the gcp provider\n${stringify(doc)}`;
}
