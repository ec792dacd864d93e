/** hostGroups: the libvirt group only for a kvm host on this host's /system socket. */
import { describe, expect, it } from 'vitest';
import { parseRelayConfig } from './config.js';
import { hostGroups } from './host-groups.js';

const base = {
  relay: 'lab-1',
  project: 'my-project',
  subscription: 'relay-commands-lab-1',
  reportsTopic: 'relay-reports',
  echoUrl: 'http://echo.example.com/',
  probeIntervalSeconds: 30,
  reportIntervalSeconds: 30,
  probeTimeoutSeconds: 5,
  installationId: 'prod',
};
const processBackend = {
  provider: 'lab',
  type: 'process',
  stateDir: '/var/lib/egress-relay',
  bindAddresses: ['127.0.0.1'],
  portRange: [31000, 31999],
};
const kvm = (host: Record<string, string>) => ({
  provider: 'vms',
  type: 'kvm',
  stateDir: '/var/lib/egress-relay',
  hosts: { h1: { pool: 'default', baseImage: 'debian.qcow2', network: 'default', ...host } },
});

describe('hostGroups', () => {
  it.each([
    ['process backends only', [processBackend], []],
    ['a kvm host on qemu:///system', [kvm({ uri: 'qemu:///system' })], ['libvirt']],
    ['a kvm host on a named /system socket', [kvm({ uri: 'qemu+unix:///system?socket=/run/x.sock' })], ['libvirt']],
    ['a kvm host over ssh', [kvm({ uri: 'qemu+ssh://relay@beelink/system' })], []],
    ['a kvm host over TLS', [kvm({ uri: 'qemu+tls://nuc.lab.example/system' })], []],
    [
      'a remote kvm host whose storage is local',
      [kvm({ uri: 'qemu+tcp://127.0.0.1/system', storageUri: 'storage:///system' })],
      ['libvirt'],
    ],
    ['process and a local kvm host', [processBackend, kvm({ uri: 'qemu:///system' })], ['libvirt']],
  ])('%s', (_, backends, groups) => {
    expect(hostGroups(parseRelayConfig({ ...base, backends }))).toEqual(groups);
  });
});
