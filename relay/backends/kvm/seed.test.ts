/** The NoCloud seed: an ISO 9660 image labelled cidata that isoinfo reads back file by file, same bytes for same input. */
import { DEFAULT_EGRESS_POLICY } from '../../../shared/config/egress-policy.js';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { PermanentError } from '../../../shared/errors.js';
import { buildIso9660 } from './iso9660.js';
import { buildSeed } from './seed.js';

const run = promisify(execFile);
const input = {
  instance: 'ep-kvm-1-0a1b2c3d',
  proxy: 'kvm-1',
  port: 3128,
  credentials: { username: 'u-kvm', password: 'p4ss-Word.1' },
  egress: DEFAULT_EGRESS_POLICY,
  createdAt: Date.UTC(2026, 10, 29, 20, 30, 5),
};

/** isoinfo comes with Debian's `genisoimage` package (an independent reader of the format). */
async function isoinfo(image: string, ...args: string[]): Promise<string> {
  return (await run('isoinfo', ['-i', image, ...args], { encoding: 'utf8' })).stdout;
}

describe('buildSeed', () => {
  let dir: string;
  let image: string;
  const seed = buildSeed(input);

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'egress-seed-'));
    image = path.join(dir, 'seed.iso');
    await writeFile(image, seed.image);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('is an ISO 9660 volume labelled cidata with Joliet names', async () => {
    const info = await isoinfo(image, '-d');
    expect(info).toMatch(/^Volume id: cidata$/m);
    expect(info).toMatch(/Joliet with UCS level 1 found/);
    expect(info).toMatch(new RegExp(`^Volume size is: ${seed.image.length / 2048}$`, 'm'));
    const listing = await isoinfo(image, '-J', '-l');
    expect(listing).toMatch(/ meta-data \n/);
    expect(listing).toMatch(/ user-data \n/);
    expect(await isoinfo(image, '-l')).toMatch(/ USER_DAT\.;1 \n/);
  });

  it('holds user-data and meta-data byte for byte', async () => {
    expect(await isoinfo(image, '-J', '-x', '/user-data')).toBe(seed.userData);
    expect(await isoinfo(image, '-J', '-x', '/meta-data')).toBe(seed.metaData);
    expect(seed.metaData).toBe(`instance-id: ${input.instance}\nlocal-hostname: ${input.instance}\n`);
  });

  it('user-data installs tinyproxy on the port with the credentials, and the guest agent', () => {
    expect(seed.userData.startsWith('#cloud-config\n')).toBe(true);
    const doc = parse(seed.userData) as {
      packages: string[];
      write_files: Array<{ path: string; content: string; defer: boolean }>;
      runcmd: string[][];
    };
    expect(doc.packages).toEqual(['tinyproxy', 'qemu-guest-agent', 'nftables', 'stunnel4', 'openssl']);
    const conf = doc.write_files.find((f) => f.path === '/etc/tinyproxy/tinyproxy.conf');
    expect(conf?.defer).toBe(true);
    expect(conf?.content).toMatch(/^Port 3128$/m);
    expect(conf?.content).toMatch(/^BasicAuth u-kvm p4ss-Word\.1$/m);
    expect(doc.runcmd).toContainEqual(['systemctl', 'restart', 'tinyproxy']);
    expect(conf?.content).toMatch(/^ConnectPort 443$/m);
    // The fence on tinyproxy's user is loaded before the proxy restarts with its configuration.
    expect(doc.write_files.find((f) => f.path === '/etc/nftables.conf')?.content).toContain('meta skuid "tinyproxy"');
    const restarts = doc.runcmd.map((c) => c.join(' '));
    expect(restarts.indexOf('systemctl restart nftables')).toBeGreaterThanOrEqual(0);
    expect(restarts.indexOf('systemctl restart nftables')).toBeLessThan(
      restarts.indexOf('systemctl restart tinyproxy'),
    );
  });

  it('gives the same bytes for the same input and different ones for another instance', () => {
    expect(buildSeed(input).image.equals(seed.image)).toBe(true);
    expect(buildSeed({ ...input, port: 8080 }).image.equals(seed.image)).toBe(false);
  });

  it('refuses credentials tinyproxy could not parse, without echoing them', () => {
    const bad = { ...input, credentials: { username: 'u', password: 'has space' } };
    expect(() => buildSeed(bad)).toThrow(PermanentError);
    expect(() => buildSeed(bad)).not.toThrow(/has space/);
  });
});

describe('buildIso9660', () => {
  it('lays files out on whole sectors after the directories, sorted by name', () => {
    const iso = buildIso9660({
      volumeId: 'cidata',
      date: new Date(0),
      files: [
        { name: 'b', data: Buffer.alloc(2049, 1) },
        { name: 'a', data: Buffer.from('x') },
      ],
    });
    // 25 sectors of descriptors and directories, then a (1 sector) and b (2 sectors).
    expect(iso.length).toBe(28 * 2048);
    expect(iso.subarray(16 * 2048 + 1, 16 * 2048 + 6).toString('ascii')).toBe('CD001');
    expect(iso[25 * 2048]).toBe('x'.charCodeAt(0));
    expect(iso[26 * 2048]).toBe(1);
  });

  it('refuses names that collide as ISO level-1 names and volume ids it cannot carry', () => {
    const data = Buffer.from('x');
    expect(() =>
      buildIso9660({
        volumeId: 'v',
        date: new Date(0),
        files: [
          { name: 'user-data-1', data },
          { name: 'user-data-2', data },
        ],
      }),
    ).toThrow(/collide/);
    expect(() => buildIso9660({ volumeId: 'x'.repeat(17), date: new Date(0), files: [] })).toThrow(/volume id/);
  });
});
