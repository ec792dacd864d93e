/**
 * infra/relay: install.sh lays out the relay under a scratch root; the unit passes systemd-analyze;
 * the installed bundle runs; the relay's user joins the libvirt group a kvm config needs and, with
 * the credentials the unit gives it, opens a root:libvirt 0660 socket.
 */
import { spawnSync } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { parseRelayConfig } from '../../relay/config.js';

const repo = join(import.meta.dirname, '..', '..');
const script = join(repo, 'infra', 'relay', 'install.sh');
const root = mkdtempSync(join(tmpdir(), 'relay-root-'));
const unitPath = join(root, 'etc', 'systemd', 'system', 'egress-relay.service');
const hasSystemdAnalyze = spawnSync('systemd-analyze', ['--version']).status === 0;
const canSwitchUser = process.getuid?.() === 0 && spawnSync('setpriv', ['--version']).status === 0;

function installInto(target: string, ...args: string[]) {
  return spawnSync('sh', [script, '--root', target, '--skip-npm', '--node', process.execPath, ...args], {
    encoding: 'utf8',
  });
}
const install = (...args: string[]) => installInto(root, ...args);

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);
const passwdEntry = () =>
  readFileSync(join(root, 'etc', 'passwd'), 'utf8')
    .split('\n')
    .find((l) => l.startsWith('egress-relay:'))
    ?.split(':');

beforeAll(() => {
  if (!existsSync(join(repo, 'dist', 'relay', 'main.js')))
    throw new Error('dist/relay is missing: run `npm run build`');
  const first = install();
  expect(first.stderr).not.toMatch(/install\.sh:/);
  expect(first.status).toBe(0);
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

// Each case runs install.sh or the installed relay (seconds each while the unit phase loads both
// cores with other files): more than vitest's default 5 s.
describe('install.sh --root', { timeout: 30_000 }, () => {
  it('creates the system user from sysusers.d, homed in its state directory, without a shell', () => {
    const [name, , uid, gid, , home, shell] = passwdEntry() ?? [];
    expect(name).toBe('egress-relay');
    expect(Number(uid)).toBeLessThan(1000);
    expect(home).toBe('/var/lib/egress-relay');
    expect(shell).toBe('/usr/sbin/nologin');
    const state = statSync(join(root, 'var', 'lib', 'egress-relay'));
    expect([state.uid, state.gid]).toEqual([Number(uid), Number(gid)]);
  });

  it('lays out the program, root-owned and read-only to the relay', () => {
    for (const f of ['main.js', 'package.json', 'package-lock.json']) {
      const path = join(root, 'opt', 'egress-relay', f);
      expect(statSync(path).uid, f).toBe(0);
      expect(mode(path), f).toBe('644');
    }
  });

  it('ships only what the relay runs: no Node proxy-server, and its install leaves out the proxy package', () => {
    const opt = join(root, 'opt', 'egress-relay');
    expect(
      readdirSync(opt)
        .filter((f) => !f.endsWith('.map'))
        .sort(),
    ).toEqual(['main.js', 'package-lock.json', 'package.json']);
    // Its own manifest and lock: the packages main.js imports and what they need, never the
    // functions' SDKs (Firestore, Compute, the functions framework, the location databases) nor a
    // bench tool (the proxy package).
    const manifest: unknown = JSON.parse(readFileSync(join(opt, 'package.json'), 'utf8'));
    expect(manifest).not.toHaveProperty('devDependencies');
    const pkg = z.object({ dependencies: z.record(z.string(), z.string()) }).parse(manifest);
    const imported = readFileSync(join(opt, 'main.js'), 'utf8').match(/(?<=from "|import\(")[^".][^"]*(?=")/g) ?? [];
    const packageOf = (s: string) =>
      s
        .split('/')
        .slice(0, s.startsWith('@') ? 2 : 1)
        .join('/');
    expect(Object.keys(pkg.dependencies).sort()).toEqual(
      [...new Set(imported.filter((s) => !s.startsWith('node:')).map(packageOf))].sort(),
    );
    const lock = z
      .object({
        packages: z.record(z.string(), z.object({ dependencies: z.record(z.string(), z.string()).optional() })),
      })
      .parse(JSON.parse(readFileSync(join(opt, 'package-lock.json'), 'utf8')));
    expect(lock.packages['']?.dependencies).toEqual(pkg.dependencies);
    for (const sdk of [
      '@google-cloud/firestore',
      '@google-cloud/compute',
      '@google-cloud/functions-framework',
      'proxy',
    ])
      expect(Object.keys(lock.packages), sdk).not.toContain(`node_modules/${sdk}`);
  });

  it('installs a config the relay accepts, readable by its group only', () => {
    const [, , , gid] = passwdEntry() ?? [];
    const config = join(root, 'etc', 'egress-relay', 'config.yaml');
    expect(mode(config)).toBe('640');
    expect(statSync(config).gid).toBe(Number(gid));
    expect(mode(join(root, 'etc', 'egress-relay'))).toBe('750');
    const parsed = parseRelayConfig(parseYaml(readFileSync(config, 'utf8')));
    expect(parsed.backends.length).toBeGreaterThan(0);
  });

  it('writes the unit with the node it was given and the key handed over by LoadCredential', () => {
    const unit = readFileSync(unitPath, 'utf8');
    expect(unit).toContain(`ExecStart=${process.execPath} /opt/egress-relay/main.js`);
    expect(unit).not.toContain('@NODE@');
    expect(unit).toContain('LoadCredential=key.json:/etc/egress-relay/key.json');
    expect(unit).toContain('Environment=GOOGLE_APPLICATION_CREDENTIALS=%d/key.json');
  });

  it('keeps an edited config on a second run and replaces the program', () => {
    const config = join(root, 'etc', 'egress-relay', 'config.yaml');
    writeFileSync(config, `${readFileSync(config, 'utf8')}# edited by the operator\n`);
    writeFileSync(join(root, 'opt', 'egress-relay', 'stale.js'), '');
    const again = install();
    expect(again.status).toBe(0);
    expect(readFileSync(config, 'utf8')).toContain('# edited by the operator');
    expect(existsSync(join(root, 'opt', 'egress-relay', 'stale.js'))).toBe(false);
    expect(readFileSync(join(root, 'etc', 'passwd'), 'utf8').match(/^egress-relay:/gm)).toHaveLength(1);
  });

  it('refuses a build that is missing and an unknown flag, saying why', () => {
    const noDist = install('--dist', join(root, 'nowhere'));
    expect(noDist.status).not.toBe(0);
    expect(noDist.stderr).toMatch(/relay\/main\.js is missing: run `npm run build`/);
    const unknown = install('--frobnicate');
    expect(unknown.status).not.toBe(0);
    expect(unknown.stderr).toMatch(/unknown argument: --frobnicate/);
  });

  it('the installed bundle runs and validates its installed config', () => {
    // --skip-npm left no node_modules; lend the checkout's (what `npm ci --omit=dev` would install).
    symlinkSync(join(repo, 'node_modules'), join(root, 'opt', 'egress-relay', 'node_modules'));
    const run = spawnSync(process.execPath, [join(root, 'opt', 'egress-relay', 'main.js')], {
      encoding: 'utf8',
      timeout: 20_000,
      env: {
        PATH: process.env['PATH'],
        EGRESS_RELAY_CONFIG: join(root, 'etc', 'egress-relay', 'config.yaml'),
        EGRESS_INSTALLATION: 'Not_A_Label',
      },
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/relay: invalid configuration: .*installationId/);
  });
});

describe.skipIf(!hasSystemdAnalyze)('egress-relay.service (systemd-analyze, present on this machine)', () => {
  it('verifies without a warning', () => {
    const r = spawnSync('systemd-analyze', ['verify', unitPath], { encoding: 'utf8' });
    expect(r.stderr.trim()).toBe('');
    expect(r.status).toBe(0);
  });

  it('catches a misspelt directive (the check above can fail)', () => {
    const bad = join(root, 'bad.service');
    writeFileSync(bad, readFileSync(unitPath, 'utf8').replace('ProtectHome=yes', 'ProtectHomme=yes'));
    const r = spawnSync('systemd-analyze', ['verify', bad], { encoding: 'utf8' });
    expect(r.stderr).toMatch(/Unknown key 'ProtectHomme'/);
  });

  it('rates the sandbox at an exposure of 2.0 or less', () => {
    const r = spawnSync(
      'systemd-analyze',
      ['security', '--offline=yes', `--root=${root}`, '--threshold=20', 'egress-relay.service'],
      { encoding: 'utf8' },
    );
    const level = /Overall exposure level for egress-relay\.service: ([\d.]+)/.exec(r.stdout)?.[1];
    expect(Number(level)).toBeLessThanOrEqual(2);
    expect(r.status).toBe(0);
  });
});

/** `name:x:id:members` lines of a root's /etc/group or /etc/passwd, by name. */
function entries(target: string, file: 'passwd' | 'group'): Map<string, string[]> {
  const text = readFileSync(join(target, 'etc', file), 'utf8');
  return new Map(text.split('\n').flatMap((l) => (l ? [[l.split(':')[0] ?? '', l.split(':')] as const] : [])));
}

/**
 * The credentials systemd gives the unit's processes (systemd.exec(5)): `User=` and `Group=` of
 * the unit and its drop-ins (the last wins), the user's groups from the group database (User=
 * initialises the supplementary list from it, as initgroups(3) does), and `SupplementaryGroups=`
 * (an empty assignment resets it).
 */
function unitCredentials(target: string): { uid: number; gid: number; groups: number[] } {
  const unit = join(target, 'etc', 'systemd', 'system', 'egress-relay.service');
  const dropInDir = `${unit}.d`;
  const dropIns = existsSync(dropInDir)
    ? readdirSync(dropInDir)
        .filter((f) => f.endsWith('.conf'))
        .sort()
        .map((f) => join(dropInDir, f))
    : [];
  let user = '';
  let group = '';
  let extra: string[] = [];
  for (const file of [unit, ...dropIns]) {
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      const [key, value = ''] = line.split(/=(.*)/s, 2);
      if (key === 'User') user = value;
      if (key === 'Group') group = value;
      if (key === 'SupplementaryGroups') extra = value === '' ? [] : [...extra, ...value.split(/\s+/)];
    }
  }
  const passwd = entries(target, 'passwd');
  const groups = entries(target, 'group');
  const gidOf = (name: string) => Number(groups.get(name)?.[2] ?? NaN);
  const members = [...groups.values()].filter((g) => (g[3] ?? '').split(',').includes(user)).map((g) => g[0] ?? '');
  return {
    uid: Number(passwd.get(user)?.[2] ?? NaN),
    gid: gidOf(group),
    groups: [...new Set([group, ...members, ...extra])].map(gidOf),
  };
}

/** Connects to a unix socket as `credentials` (setpriv, no new privileges): `connected` or the errno code. */
function connectAs(credentials: { uid: number; gid: number; groups: number[] }, socket: string): string {
  // Exits once connected: the listening side is this test process, blocked in spawnSync meanwhile.
  const script = `require('node:net').connect(${JSON.stringify(socket)})
    .on('connect', () => process.stdout.write('connected', () => process.exit(0)))
    .on('error', (e) => process.stdout.write(e.code))`;
  const r = spawnSync(
    'setpriv',
    [
      `--reuid=${credentials.uid}`,
      `--regid=${credentials.gid}`,
      `--groups=${credentials.groups.join(',')}`,
      '--no-new-privs',
      '--',
      process.execPath,
      '-e',
      script,
    ],
    { encoding: 'utf8', cwd: '/', timeout: 10_000 },
  );
  return r.stdout || r.stderr;
}

describe.skipIf(!canSwitchUser)(
  'install.sh --root with a kvm host on this host (qemu:///system)',
  { timeout: 30_000 },
  () => {
    const libvirtGid = 990;
    const server = createServer((c) => c.end());
    let kvmRoot = '';
    let socketDir = '';
    let socket = '';
    let dropIn = '';

    beforeAll(async () => {
      kvmRoot = mkdtempSync(join(tmpdir(), 'relay-kvm-root-'));
      socketDir = mkdtempSync(join(tmpdir(), 'relay-libvirt-run-'));
      socket = join(socketDir, 'libvirt-sock');
      dropIn = join(kvmRoot, 'etc', 'systemd', 'system', 'egress-relay.service.d', 'local.conf');
      const etc = join(kvmRoot, 'etc', 'egress-relay');
      mkdirSync(etc, { recursive: true });
      // The sample relay config with its first host moved onto this machine's libvirt.
      const sample = readFileSync(join(repo, 'docs', 'samples', 'config', 'relay', 'kvm.yaml'), 'utf8');
      const local = sample.replace('uri: qemu+ssh://relay@beelink/system', 'uri: qemu:///system');
      expect(local).not.toBe(sample);
      writeFileSync(join(etc, 'config.yaml'), local);
      // The daemon's socket as Debian's libvirt makes it: root:libvirt 0660, in a directory all may search.
      chmodSync(socketDir, 0o755);
      await new Promise<void>((resolve) => server.listen(socket, resolve));
      chownSync(socket, 0, libvirtGid);
      chmodSync(socket, 0o660);
    });

    afterAll(async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(kvmRoot, { recursive: true, force: true });
      rmSync(socketDir, { recursive: true, force: true });
    });

    it('refuses while the host has no libvirt group, saying what to install', () => {
      const r = installInto(kvmRoot);
      expect(r.status).not.toBe(0);
      expect(r.stderr).toMatch(/must join group libvirt, which does not exist: install libvirt first/);
    });

    it('adds egress-relay to the libvirt group in the group database, through sysusers.d', () => {
      appendFileSync(join(kvmRoot, 'etc', 'group'), `libvirt:x:${libvirtGid}:\n`);
      const r = installInto(kvmRoot);
      expect(r.stderr).not.toMatch(/install\.sh:/);
      expect(r.status).toBe(0);
      expect(entries(kvmRoot, 'group').get('libvirt')?.[3]?.split(',')).toContain('egress-relay');
      const sysusers = readFileSync(join(kvmRoot, 'usr', 'lib', 'sysusers.d', 'egress-relay.conf'), 'utf8');
      expect(sysusers).toMatch(/^m egress-relay libvirt$/m);
    });

    it('the unit’s credentials open the root:libvirt 0660 socket; a process-only install’s cannot', () => {
      const kvmUser = unitCredentials(kvmRoot);
      expect(kvmUser.groups).toContain(libvirtGid);
      expect(connectAs(kvmUser, socket)).toBe('connected');
      const processUser = unitCredentials(root);
      expect(processUser.groups).not.toContain(libvirtGid);
      expect(connectAs(processUser, socket)).toBe('EACCES');
    });

    it('keeps the operator’s drop-in on a re-install', () => {
      mkdirSync(join(dropIn, '..'), { recursive: true });
      writeFileSync(dropIn, '[Service]\nEnvironment=EGRESS_TELEMETRY=gcp\n');
      expect(installInto(kvmRoot).status).toBe(0);
      expect(readFileSync(dropIn, 'utf8')).toContain('EGRESS_TELEMETRY=gcp');
      expect(entries(kvmRoot, 'group').get('libvirt')?.[3]?.split(',')).toEqual(['egress-relay']);
    });

    it.skipIf(!hasSystemdAnalyze)('the installed unit with its drop-in verifies without a warning', () => {
      const unit = join(kvmRoot, 'etc', 'systemd', 'system', 'egress-relay.service');
      const r = spawnSync('systemd-analyze', ['verify', unit], { encoding: 'utf8' });
      expect(r.stderr.trim()).toBe('');
      expect(r.status).toBe(0);
      writeFileSync(dropIn, '[Service]\nEnvironmentt=X=1\n');
      const bad = spawnSync('systemd-analyze', ['verify', unit], { encoding: 'utf8' });
      expect(bad.stderr).toMatch(/local\.conf:2: Unknown key 'Environmentt'/);
    });
  },
);
