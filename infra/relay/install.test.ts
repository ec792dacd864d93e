/** infra/relay: install.sh lays out the relay under a scratch root; the unit passes systemd-analyze; the installed bundle runs. */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { parseRelayConfig } from '../../relay/config.js';

const repo = join(import.meta.dirname, '..', '..');
const script = join(repo, 'infra', 'relay', 'install.sh');
const root = mkdtempSync(join(tmpdir(), 'relay-root-'));
const unitPath = join(root, 'etc', 'systemd', 'system', 'egress-relay.service');
const hasSystemdAnalyze = spawnSync('systemd-analyze', ['--version']).status === 0;

function install(...args: string[]) {
  return spawnSync('sh', [script, '--root', root, '--skip-npm', '--node', process.execPath, ...args], {
    encoding: 'utf8',
  });
}

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

describe('install.sh --root', () => {
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
    for (const f of ['main.js', 'proxy-server.js', 'package.json', 'package-lock.json']) {
      const path = join(root, 'opt', 'egress-relay', f);
      expect(statSync(path).uid, f).toBe(0);
      expect(mode(path), f).toBe('644');
    }
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
