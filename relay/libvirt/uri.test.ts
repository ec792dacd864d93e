import { describe, expect, it } from 'vitest';
import { LibvirtUriError } from './errors.js';
import { parseLibvirtUri } from './uri.js';

const env = { XDG_RUNTIME_DIR: '/run/user/1000' };

describe('libvirt client: URIs', () => {
  it.each([
    [
      'qemu+ssh://relay@beelink/system',
      { transport: 'ssh', host: 'beelink', user: 'relay', port: undefined, remoteName: 'qemu:///system' },
    ],
    ['qemu+ssh://beelink:2222/system', { transport: 'ssh', host: 'beelink', user: undefined, port: 2222 }],
    ['qemu+tcp://10.0.0.5/system', { transport: 'tcp', host: '10.0.0.5', port: 16509, remoteName: 'qemu:///system' }],
    ['test+tcp://127.0.0.1:16511/default', { transport: 'tcp', port: 16511, remoteName: 'test:///default' }],
    ['qemu+tcp://[::1]:1234/system', { host: '::1', port: 1234 }],
    ['qemu+tls://host.example/system', { transport: 'tls', port: 16514 }],
    ['qemu://host.example/system', { transport: 'tls', host: 'host.example' }],
    ['qemu:///session', { transport: 'unix', socketPath: '/run/user/1000/libvirt/libvirt-sock' }],
    [
      'storage+unix:///session?socket=/tmp/d/libvirt-sock',
      { transport: 'unix', socketPath: '/tmp/d/libvirt-sock', remoteName: 'storage:///session' },
    ],
    // Client-side parameters are consumed; others are forwarded to the daemon's driver, as libvirt does.
    [
      'qemu+tls://h/system?no_verify=1&pkipath=/p&foo=bar',
      { params: { no_verify: '1', pkipath: '/p' }, remoteName: 'qemu:///system?foo=bar' },
    ],
    ['qemu+ssh://h/system?name=qemu:///session', { remoteName: 'qemu:///session' }],
  ])('%s', (uri, expected) => {
    expect(parseLibvirtUri(uri, env)).toMatchObject({ uri, ...expected });
  });

  it('defaults qemu:///system to the system socket', () => {
    expect(parseLibvirtUri('qemu:///system', env).socketPath).toMatch(
      /^\/var\/run\/libvirt\/(virtqemud|libvirt)-sock$/,
    );
  });

  it.each([
    ['beelink/system', 'scheme'],
    ['QEMU:///system', 'scheme'],
    ['qemu+ssh+tcp://h/system', 'scheme'],
    ['qemu+libssh2://h/system', 'transport'],
    ['qemu+udp://h/system', 'transport'],
    ['qemu+unix://h/system', 'host'],
    ['qemu+tcp:///system', 'host'],
    ['qemu+tcp://h:99999/system', 'authority'],
    ['qemu+tcp://u@h/system', 'user'],
    ['qemu+ssh://u:pw@h/system', 'user'],
    ['qemu+ssh://h', 'path'],
    ['qemu+unix:///system?socket=relative', 'socket'],
    ['test:///default', 'socket'],
  ])('%s is rejected naming the %s', (uri, part) => {
    const error = (() => {
      try {
        parseLibvirtUri(uri, env);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(LibvirtUriError);
    expect(error).toMatchObject({ part });
  });

  it('needs XDG_RUNTIME_DIR for a session socket', () => {
    expect(() => parseLibvirtUri('qemu:///session', {})).toThrow(/XDG_RUNTIME_DIR/);
  });
});
