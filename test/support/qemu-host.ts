/**
 * A real kvm host for tests: libvirtd with the qemu driver inside a network namespace made for the
 * run (its own mount namespace over libvirt's state directories), a routed libvirt network with
 * DHCP, a `dir` storage pool holding the test guest image (scripts/guest-image.sh), and a veth pair
 * so this process reaches the guests and they reach back to {@link QemuHost.hostIp}. Everything it
 * starts (libvirtd, dnsmasq, qemu, the namespace) is stopped by PID in `close()`.
 */
import { execFile, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { link, mkdir, mkdtemp, readdir, readFile, rm, writeFile, copyFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';

import { createVethNetns } from './veth-netns.js';

const run = promisify(execFile);

/** The image built by scripts/guest-image.sh for the current recipe. */
export interface GuestImage {
  dir: string;
  base: string;
  kernel: string;
  initrd: string;
}

/** Finds the cached test guest image; `npm test` builds it (scripts/test-deps.sh). */
export async function guestImage(): Promise<GuestImage> {
  const { stdout } = await run('bash', ['scripts/guest-image.sh', '--path'], { encoding: 'utf8' });
  const dir = stdout.trim();
  const image = {
    dir,
    base: join(dir, 'base.qcow2'),
    kernel: join(dir, 'vmlinuz'),
    initrd: join(dir, 'initrd.img'),
  };
  for (const file of [image.base, image.kernel, image.initrd])
    if (!existsSync(file)) throw new Error(`${file} is missing: build it with scripts/guest-image.sh (npm test does)`);
  return image;
}

export interface QemuHost {
  /** `qemu:///system?socket=…`: the daemon's socket, reachable by path from this namespace. */
  uri: string;
  /** The network namespace (libvirtd, dnsmasq and the guests' bridge live there). */
  netns: string;
  /** This side of the veth pair: guests reach listeners bound here. */
  hostIp: string;
  /** The guests' subnet prefix (`10.214.N`), routed through the namespace. */
  guestPrefix: string;
  poolName: string;
  networkName: string;
  image: GuestImage;
  /** The relay config entry of this host (qemu domain type, direct kernel boot of the test image). */
  hostConfig(): Record<string, unknown>;
  virsh(...args: string[]): Promise<string>;
  /** The PID of a running domain's qemu process (from libvirt's pid file). */
  qemuPid(domain: string): Promise<number>;
  /** The guest's serial console so far (for failure messages). */
  serialLog(domain: string): Promise<string>;
  /** The volume names in the pool. */
  volumes(): Promise<string[]>;
  close(): Promise<void>;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function stopPid(pid: number): Promise<void> {
  if (!alive(pid)) return;
  process.kill(pid, 'SIGTERM');
  for (let i = 0; i < 50 && alive(pid); i++) await sleep(100);
  if (alive(pid)) process.kill(pid, 'SIGKILL');
  for (let i = 0; i < 50 && alive(pid); i++) await sleep(100);
}

/** PIDs from the `*.pid` files libvirt keeps for qemu and dnsmasq under its run directory. */
async function childPids(runDir: string): Promise<number[]> {
  const pids: number[] = [];
  for (const sub of ['qemu', 'network']) {
    const dir = join(runDir, 'libvirt', sub);
    const files = await readdir(dir).catch(() => [] as string[]);
    for (const file of files.filter((f) => f.endsWith('.pid'))) {
      const pid = Number((await readFile(join(dir, file), 'utf8').catch(() => '')).trim());
      if (Number.isInteger(pid) && pid > 1) pids.push(pid);
    }
  }
  return pids;
}

/** A free index for names and subnets (`egq<N>`, 10.213.N.0/30, 10.214.N.0/24). */
async function freeIndex(): Promise<number> {
  const { stdout } = await run('ip', ['-o', 'addr'], { encoding: 'utf8' });
  const { stdout: spaces } = await run('ip', ['netns', 'list'], { encoding: 'utf8' });
  for (let tries = 0; tries < 100; tries++) {
    const n = 1 + Math.floor(Math.random() * 250);
    if (!stdout.includes(`10.213.${n}.`) && !spaces.includes(`egq${n} `) && !spaces.includes(`egq${n}\n`)) return n;
  }
  throw new Error('no free test subnet in 10.213.0.0/16');
}

/**
 * Starts the host. Needs root and the Debian packages libvirt-daemon-system, qemu-system-x86,
 * dnsmasq-base and iproute2, and the image of scripts/guest-image.sh.
 */
export async function startQemuHost(): Promise<QemuHost> {
  const image = await guestImage();
  const n = await freeIndex();
  const netns = `egq${n}`;
  const hostIf = `egq${n}h`;
  const nsIf = `egq${n}n`;
  const hostIp = `10.213.${n}.1`;
  const nsIp = `10.213.${n}.2`;
  const guestPrefix = `10.214.${n}`;
  const dir = await mkdtemp(join(tmpdir(), 'qemu-host-'));
  const lv = {
    etc: join(dir, 'etc'),
    run: join(dir, 'run'),
    lib: join(dir, 'lib'),
    log: join(dir, 'log'),
    cache: join(dir, 'cache'),
  };
  for (const d of [...Object.values(lv), join(dir, 'pool'), join(dir, 'log', 'qemu')])
    await mkdir(d, { recursive: true });
  await writeFile(
    join(lv.etc, 'libvirtd.conf'),
    'unix_sock_group = "root"\nunix_sock_rw_perms = "0770"\nauth_unix_rw = "none"\nauth_unix_ro = "none"\nlog_outputs = "3:file:/var/log/libvirt/libvirtd.log"\n',
  );
  // Inside the namespaces there are no cgroups of ours, no security drivers and no virtlogd.
  await writeFile(
    join(lv.etc, 'qemu.conf'),
    'user = "root"\ngroup = "root"\ndynamic_ownership = 0\nsecurity_driver = "none"\ncgroup_controllers = [ ]\nstdio_handler = "file"\nremember_owner = 0\n',
  );
  const uri = `qemu:///system?socket=${join(lv.run, 'libvirt', 'libvirt-sock')}`;
  const virsh = async (...args: string[]) =>
    (await run('virsh', ['-c', uri, ...args], { encoding: 'utf8', timeout: 60_000 })).stdout;

  let daemonPid: number | undefined;
  let closed: Promise<void> | undefined;
  const close = () =>
    (closed ??= (async () => {
      const children = await childPids(lv.run);
      if (daemonPid !== undefined) await stopPid(daemonPid);
      // libvirtd leaves qemu and dnsmasq running on exit, as it would across a restart.
      for (const pid of [...children, ...(await childPids(lv.run))]) await stopPid(pid);
      await run('ip', ['netns', 'del', netns]).catch(() => undefined);
      await run('ip', ['link', 'del', hostIf]).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    })());

  try {
    const inNs = await createVethNetns({ netns, hostIf, nsIf, hostIp, nsIp });
    await inNs('sysctl', '-qw', 'net.ipv4.ip_forward=1');
    await run('ip', ['route', 'add', `${guestPrefix}.0/24`, 'via', nsIp, 'dev', hostIf]);

    const mounts = [
      [lv.etc, '/etc/libvirt'],
      [lv.run, '/run'],
      [lv.lib, '/var/lib/libvirt'],
      [lv.log, '/var/log/libvirt'],
      [lv.cache, '/var/cache/libvirt'],
    ]
      // A machine with only libvirt-daemon (no libvirt-daemon-system) lacks some of the targets.
      .map(([from, to]) => `mkdir -p '${to}' && mount --bind '${from}' '${to}'`)
      .join(' && ');
    // ip, unshare and sh each exec the next: the child's PID is libvirtd's.
    const outputPath = join(dir, 'libvirtd.out');
    const output = openSync(outputPath, 'a');
    const child = spawn(
      'ip',
      [
        'netns',
        'exec',
        netns,
        'unshare',
        '--mount',
        '--propagation',
        'private',
        '/bin/sh',
        '-c',
        `${mounts} && exec /usr/sbin/libvirtd`,
      ],
      { stdio: ['ignore', output, output], detached: true },
    );
    closeSync(output);
    daemonPid = child.pid;
    child.unref();
    const socket = join(lv.run, 'libvirt', 'libvirt-sock');
    for (let i = 0; !existsSync(socket); i++) {
      if (i > 300 || child.exitCode !== null)
        throw new Error(
          `libvirtd did not start: ${await readFile(outputPath, 'utf8').catch(() => '')}${await readFile(join(lv.log, 'libvirtd.log'), 'utf8').catch(() => '')}`,
        );
      await sleep(100);
    }
    await virsh('version');

    const networkName = 'egress-test';
    // Routed, no firewall rules of libvirt's: the veth route makes the guests reachable from here.
    await writeFile(
      join(dir, 'net.xml'),
      `<network><name>${networkName}</name><forward mode='open'/><bridge name='egq${n}br' stp='off' delay='0'/><dns enable='no'/>` +
        `<ip address='${guestPrefix}.1' netmask='255.255.255.0'><dhcp><range start='${guestPrefix}.10' end='${guestPrefix}.200'/></dhcp></ip></network>`,
    );
    await virsh('net-create', join(dir, 'net.xml'));

    const poolName = 'egress';
    const poolDir = join(dir, 'pool');
    const baseImage = 'base.qcow2';
    // A hard link when the cache is on the same file system: the base is only ever read.
    await link(image.base, join(poolDir, baseImage)).catch(() => copyFile(image.base, join(poolDir, baseImage)));
    await virsh('pool-create-as', poolName, 'dir', '--target', poolDir);

    return {
      uri,
      netns,
      hostIp,
      guestPrefix,
      poolName,
      networkName,
      image,
      hostConfig: () => ({
        uri,
        pool: poolName,
        baseImage,
        network: networkName,
        domainType: 'qemu',
        boot: { kernel: image.kernel, initrd: image.initrd, cmdline: 'root=/dev/vda rw console=ttyS0' },
        consoleLogDir: '/var/log/libvirt/qemu',
      }),
      virsh,
      async qemuPid(domain) {
        return Number((await readFile(join(lv.run, 'libvirt', 'qemu', `${domain}.pid`), 'utf8')).trim());
      },
      serialLog: (domain) =>
        readFile(join(lv.log, 'qemu', `${domain}-serial.log`), 'utf8').catch(() => '(no serial log)'),
      async volumes() {
        // libvirt 9's vol-list has no --name: the first column of the table after its two header lines.
        return (await virsh('vol-list', '--pool', poolName))
          .split('\n')
          .slice(2)
          .map((l) => l.trim().split(/\s+/)[0] ?? '')
          .filter(Boolean);
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
