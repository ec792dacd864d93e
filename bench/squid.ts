/**
 * Debian's Squid as a new user sets it up in front of several upstream proxies: Basic auth with
 * `basic_ncsa_auth` over an htpasswd file, each upstream a `cache_peer … parent … round-robin`
 * with its credentials (`login=`), `never_direct`, no cache. Run in the foreground (`-N`) so its
 * PID is the one whose process tree the bench measures.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../infra/local/emulators.js';
import { benchChild, type BenchChild } from './artifacts.js';
import type { ProxyHop } from './gateway-load.js';

export const SQUID_PATH = '/usr/sbin/squid';
const NCSA_AUTH = '/usr/lib/squid/basic_ncsa_auth';

/** squid.conf for `port` with round-robin parents on loopback `parents` (credentials bench:bench-secret). */
export function squidConfig(dir: string, port: number, parents: readonly number[]): string {
  return [
    `http_port 127.0.0.1:${port}`,
    `auth_param basic program ${NCSA_AUTH} ${join(dir, 'passwd')}`,
    'auth_param basic children 5 startup=5 idle=1',
    'auth_param basic credentialsttl 2 hours',
    'acl users proxy_auth REQUIRED',
    'http_access allow users',
    'http_access deny all',
    ...parents.map(
      (p, i) =>
        `cache_peer 127.0.0.1 parent ${p} 0 no-query no-digest round-robin login=bench:bench-secret name=tiny${i}`,
    ),
    'never_direct allow all',
    'cache deny all',
    // As the gateway and the fleet's tinyproxy do: the target sees neither a Via header nor the client's address.
    'via off',
    'forwarded_for delete',
    'cache_mem 8 MB',
    'access_log none',
    `cache_log ${join(dir, 'cache.log')}`,
    `pid_filename ${join(dir, 'squid.pid')}`,
    `coredump_dir ${dir}`,
    'max_filedescriptors 16384',
    'shutdown_lifetime 0 seconds',
    '',
  ].join('\n');
}

/** Starts Squid; resolves once it accepts connections (10 s at most). */
export async function startSquid(
  parents: readonly number[],
): Promise<{ child: BenchChild; hop: ProxyHop & { user: string; pass: string } }> {
  const dir = mkdtempSync(join(tmpdir(), 'egress-bench-squid-'));
  // Started as root, Squid runs as its `proxy` user: it must read the password file and write its log here.
  chmodSync(dir, 0o777);
  const [user, pass] = ['bench', 'bench-peer-secret'];
  const hashed = spawnSync('htpasswd', ['-nbB', user, pass], { encoding: 'utf8' });
  if (hashed.status !== 0) throw new Error(`htpasswd failed: ${hashed.stderr}`);
  writeFileSync(join(dir, 'passwd'), hashed.stdout.trim() + '\n');
  const port = await freePort();
  writeFileSync(join(dir, 'squid.conf'), squidConfig(dir, port, parents));
  const proc = spawn(SQUID_PATH, ['-N', '-f', join(dir, 'squid.conf')], { stdio: 'ignore' });
  const child = benchChild(proc, () => rmSync(dir, { recursive: true, force: true }));
  for (let i = 0; ; i++) {
    const up = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (up) break;
    if (i >= 100 || proc.exitCode !== null) {
      await child.stop();
      throw new Error(`squid did not listen on ${port} within 10 s (see ${join(dir, 'cache.log')})`);
    }
    await sleep(100);
  }
  const authorization = `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
  return { child, hop: { port, authorization, user, pass } };
}
