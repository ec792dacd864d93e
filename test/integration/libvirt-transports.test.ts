// The libvirt client's transports against a real libvirtd: unix socket, TLS with certificates made here, and ssh.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, DomainState, LibvirtConnectionLostError, StoragePoolState } from '../../relay/libvirt/index.js';
import { freePort } from '../../infra/local/emulators.js';
import { type Libvirtd, startLibvirtd } from '../support/libvirtd.js';
import { rejection } from '../support/rejection.js';

const run = promisify(execFile);

/** Makes a CA and a certificate signed by it with `extensions` (openssl x509 -extfile syntax). */
async function makeCa(dir: string, name: string): Promise<{ cert: string; key: string }> {
  const cert = join(dir, `${name}-cacert.pem`);
  const key = join(dir, `${name}-cakey.pem`);
  await run('openssl', [
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', `/CN=${name}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
  ]); // prettier-ignore
  return { cert, key };
}

async function issue(dir: string, ca: { cert: string; key: string }, name: string, extensions: string[]) {
  const cert = join(dir, `${name}cert.pem`);
  const key = join(dir, `${name}key.pem`);
  const csr = join(dir, `${name}.csr`);
  const ext = join(dir, `${name}.ext`);
  await writeFile(
    ext,
    ['basicConstraints=CA:FALSE', 'keyUsage=digitalSignature,keyEncipherment', ...extensions].join('\n'),
  );
  await run('openssl', ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', csr, '-subj', `/CN=${name}`]);
  await run('openssl', [
    'x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial', '-out', cert, '-days', '1',
    '-extfile', ext,
  ]); // prettier-ignore
  return { cert, key };
}

let dir: string;
/** Killed after the file even when a test times out before its own cleanup. */
const children: ChildProcess[] = [];
let daemon: Libvirtd;
/** `pkipath` layout libvirt expects: cacert.pem, clientcert.pem, clientkey.pem. */
let pkiDir: string;
let goodCa: { cert: string; key: string };
let otherCa: { cert: string; key: string };
let client: { cert: string; key: string };
let strangerClient: { cert: string; key: string };

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'libvirt-transports-'));
  await chmod(dir, 0o755);
  goodCa = await makeCa(dir, 'good');
  otherCa = await makeCa(dir, 'other');
  const server = await issue(dir, goodCa, 'server', ['extendedKeyUsage=serverAuth', 'subjectAltName=IP:127.0.0.1']);
  client = await issue(dir, goodCa, 'client', ['extendedKeyUsage=clientAuth']);
  strangerClient = await issue(dir, otherCa, 'stranger', ['extendedKeyUsage=clientAuth']);
  pkiDir = join(dir, 'pki');
  await mkdir(pkiDir);
  await writeFile(join(pkiDir, 'cacert.pem'), await readFile(goodCa.cert));
  await writeFile(join(pkiDir, 'clientcert.pem'), await readFile(client.cert));
  await writeFile(join(pkiDir, 'clientkey.pem'), await readFile(client.key));
  daemon = await startLibvirtd({ tls: { caFile: goodCa.cert, certFile: server.cert, keyFile: server.key } });
}, 60_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await daemon?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('libvirt client: transports', () => {
  it('speaks over the unix socket', async () => {
    const conn = await connect(daemon.testUnixUri);
    expect(await conn.getDomainState(await conn.lookupDomainByName('test'))).toMatchObject({
      state: DomainState.RUNNING,
    });
    await conn.close();
  });

  it('speaks TLS with the certificates from ?pkipath= or from explicit files', async () => {
    const base = `test+tls://127.0.0.1:${daemon.tlsPort}/default`;
    const viaPkiPath = await connect(`${base}?pkipath=${pkiDir}`);
    expect(await viaPkiPath.getHostname()).toMatch(/\S/);
    await viaPkiPath.close();
    const viaFiles = await connect(base, { tls: { caFile: goodCa.cert, certFile: client.cert, keyFile: client.key } });
    expect(await viaFiles.lookupDomainByName('test')).toMatchObject({ name: 'test' });
    await viaFiles.close();
  });

  it('refuses a daemon certificate from an unknown CA unless ?no_verify=1, and the daemon refuses an unknown client', async () => {
    const base = `test+tls://127.0.0.1:${daemon.tlsPort}/default`;
    const wrongCa = { caFile: otherCa.cert, certFile: client.cert, keyFile: client.key };
    expect(await rejection(connect(base, { tls: wrongCa }))).toBeInstanceOf(LibvirtConnectionLostError);
    const unverified = await connect(`${base}?no_verify=1`, { tls: wrongCa });
    expect(await unverified.getHostname()).toMatch(/\S/);
    await unverified.close();
    const stranger = { caFile: goodCa.cert, certFile: strangerClient.cert, keyFile: strangerClient.key };
    expect(await rejection(connect(base, { tls: stranger, timeoutMs: 5_000 }))).toBeInstanceOf(
      LibvirtConnectionLostError,
    );
  });

  it('runs `ssh … HOST virt-ssh-helper URI` and speaks over its stdio', async () => {
    // Stands in for the network hop only: runs the remote command as an ssh server would (as the
    // login user, here nobody with the daemon's runtime dir), so virt-ssh-helper and libvirtd are real.
    const fakeSsh = join(dir, 'ssh');
    await writeFile(
      fakeSsh,
      `#!/bin/sh
printf '%s\\n' "$@" > '${join(dir, 'ssh-argv')}'
for last; do :; done
exec setpriv --reuid=65534 --regid=65534 --clear-groups env XDG_RUNTIME_DIR='${daemon.home}' sh -c "$last"
`,
    );
    await chmod(fakeSsh, 0o755);
    // A /session URI: virt-ssh-helper then looks in $XDG_RUNTIME_DIR/libvirt (for /default it would
    // want /var/run/libvirt/libvirt-sock, the system daemon's).
    const conn = await connect(`storage+ssh://relay@beelink:2222/session?command=${fakeSsh}&keyfile=/keys/id`);
    const pool = await conn.lookupStoragePoolByName(daemon.poolName);
    expect(await conn.getStoragePoolInfo(pool)).toMatchObject({ state: StoragePoolState.RUNNING });
    await conn.close();
    const argv = (await readFile(join(dir, 'ssh-argv'), 'utf8')).trimEnd().split('\n');
    expect(argv).toEqual([
      '-T', '-e', 'none', '-o', 'BatchMode=yes', '-p', '2222', '-l', 'relay', '-i', '/keys/id',
      '--', 'beelink', "virt-ssh-helper 'storage:///session'",
    ]); // prettier-ignore
  });

  it('speaks through a real ssh and sshd on loopback', async () => {
    const sshDir = join(dir, 'sshd');
    await mkdir(sshDir);
    await mkdir('/run/sshd', { recursive: true }); // sshd's privilege-separation directory
    await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(sshDir, 'hostkey')]);
    await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(sshDir, 'id')]);
    await writeFile(join(sshDir, 'authorized_keys'), await readFile(join(sshDir, 'id.pub')));
    const port = await freePort();
    const hostKey = (await readFile(join(sshDir, 'hostkey.pub'), 'utf8')).split(' ').slice(0, 2).join(' ');
    await writeFile(join(sshDir, 'known_hosts'), `[127.0.0.1]:${port} ${hostKey}\n`);
    await writeFile(
      join(sshDir, 'sshd_config'),
      [
        `Port ${port}`,
        'ListenAddress 127.0.0.1',
        `HostKey ${join(sshDir, 'hostkey')}`,
        `PidFile ${join(sshDir, 'sshd.pid')}`,
        `AuthorizedKeysFile ${join(sshDir, 'authorized_keys')}`,
        'PermitRootLogin prohibit-password',
        'PasswordAuthentication no',
        'KbdInteractiveAuthentication no',
        'UsePAM no',
        'StrictModes no',
        // The daemon runs as nobody, whose shell refuses logins: the root login's command runs as
        // nobody with the daemon's runtime dir, where virt-ssh-helper looks for a /session socket.
        `ForceCommand exec setpriv --reuid=65534 --regid=65534 --clear-groups env XDG_RUNTIME_DIR=${daemon.home} sh -c "$SSH_ORIGINAL_COMMAND"`,
      ].join('\n'),
    );
    const sshd = spawn('/usr/sbin/sshd', ['-D', '-e', '-f', join(sshDir, 'sshd_config')], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(sshd);
    let sshdLog = '';
    try {
      await new Promise<void>((resolve, reject) => {
        sshd.stderr.setEncoding('utf8');
        sshd.stderr.on('data', (text: string) => {
          sshdLog += text;
          if (sshdLog.includes('Server listening')) resolve();
        });
        sshd.once('exit', () => reject(new Error(`sshd exited: ${sshdLog}`)));
      });
      const query = `keyfile=${join(sshDir, 'id')}&known_hosts=${join(sshDir, 'known_hosts')}`;
      const conn = await connect(`storage+ssh://root@127.0.0.1:${port}/session?${query}`);
      const pool = await conn.lookupStoragePoolByName(daemon.poolName);
      expect(await conn.getStoragePoolInfo(pool)).toMatchObject({ state: StoragePoolState.RUNNING });
      const lost = new Promise((resolve) => conn.onClose(resolve));
      sshd.kill(); // only the listener: the session's own sshd process keeps serving
      expect(await conn.lookupStoragePoolByName(daemon.poolName)).toEqual(pool);
      await conn.close();
      expect(await lost).toBeUndefined();
    } catch (error) {
      throw new Error(`${String(error)}\nsshd: ${sshdLog}`, { cause: error });
    } finally {
      sshd.kill();
    }
  });

  it('fails with the typed error and ssh’s own message when ssh cannot log in', async () => {
    const failingSsh = join(dir, 'ssh-denied');
    await writeFile(failingSsh, '#!/bin/sh\necho "relay@beelink: Permission denied (publickey)." >&2\nexit 255\n');
    await chmod(failingSsh, 0o755);
    const error = await rejection(connect('qemu+ssh://relay@beelink/system', { ssh: { command: failingSsh } }));
    expect(error).toBeInstanceOf(LibvirtConnectionLostError);
    expect(String((error as Error).cause ?? error)).toMatch(/Permission denied/);
  });
});
