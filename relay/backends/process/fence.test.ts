/**
 * The process backend's egress fence with real traffic: real tinyproxy processes run as users of
 * their own, the nftables table on their uid, and curl (or a raw request line, for the address
 * forms curl would rewrite) through them. Needs root, `nft` and tinyproxy; the tables are removed
 * after.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { egressPolicySchema, localEgressPolicy, type EgressPolicy } from '../../../shared/config/egress-policy.js';
import { createLogger } from '../../../shared/logger.js';
import type { RelayBackend } from '../backend.js';
import { NFT_PATH, removeFence } from './fence.js';
import { createProcessBackend, stopAllInstances } from './index.js';
import { TINYPROXY_PATH } from './tinyproxy.js';

const canFence = process.getuid?.() === 0 && existsSync(NFT_PATH) && existsSync(TINYPROXY_PATH);
const credentials = { username: 'fence', password: 'fence-Pass.1' };
const auth = `${credentials.username}:${credentials.password}`;
/** Unused uids (no passwd entry needed): only these sockets are fenced, nothing else on the machine. */
const uid = 61_000 + Math.floor(Math.random() * 4000) * 2;

interface Target {
  port: number;
  close: () => Promise<void>;
}

/** A loopback HTTP server answering `reached <name>`: whatever reaches it got through the fence. */
async function target(name: string): Promise<Target> {
  const server = http.createServer((_req, res) => res.end(`reached ${name}`));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { port: address.port, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** curl through the proxy, plain (`-x`) or tunnelled (`-p`): the status and body, or the failure. */
function curl(proxyPort: number, url: string, tunnel: boolean): Promise<{ status: number; body: string }> {
  const args = ['-sS', '--max-time', '10', '-x', `http://${auth}@127.0.0.1:${proxyPort}`, ...(tunnel ? ['-p'] : [])];
  return new Promise((resolve) => {
    execFile('curl', [...args, '-w', '\n%{http_code}', url], { encoding: 'utf8' }, (err, stdout, stderr) => {
      const lines = stdout.trimEnd().split('\n');
      const status = Number(lines.pop());
      resolve({ status: err ? 0 : status, body: err ? stderr : lines.join('\n') });
    });
  });
}

/** One raw request line to the proxy (the address exactly as an attacker writes it): the status and body. */
function raw(proxyPort: number, line: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(proxyPort, '127.0.0.1');
    let data = '';
    socket.setTimeout(10_000, () => socket.destroy(new Error('timeout')));
    socket.on('data', (chunk: Buffer) => {
      data += chunk.toString('latin1');
      // A tunnel that opened is a success already: speak through it, then stop.
      if (/^HTTP\/1\.[01] 200/.test(data) && line.startsWith('CONNECT') && !data.includes('reached'))
        socket.write('GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n');
    });
    socket.on('error', reject);
    socket.on('close', () => resolve({ status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(data)?.[1] ?? 0), body: data }));
    const proxyAuth = Buffer.from(auth).toString('base64');
    socket.write(`${line} HTTP/1.1\r\nHost: x\r\nProxy-Authorization: Basic ${proxyAuth}\r\nConnection: close\r\n\r\n`);
  });
}

/**
 * Spellings of 127.0.0.1 that an attacker writes to slip past a check on the text (the inet_aton
 * forms glibc's resolver takes: one to four parts, each decimal, octal or hex; IPv4-mapped IPv6),
 * `count` of them from `seed`: each must reach the allowed server and be refused the fenced one.
 */
function loopbackSpellings(seed: number, count: number): string[] {
  let state = seed >>> 0;
  const next = (n: number) => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state % n;
  };
  const part = (value: number) => {
    const form = next(3);
    if (form === 1) return `0${value.toString(8)}`;
    if (form === 2) return `0x${value.toString(16)}`;
    return String(value);
  };
  // 127.0.0.1 as one, two, three or four parts: the last part holds the bytes the others do not.
  const splits: number[][] = [[0x7f000001], [0x7f, 0x000001], [0x7f, 0, 0x0001], [0x7f, 0, 0, 1]];
  const mapped = ['[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '[0:0:0:0:0:ffff:7f00:0001]', '[::FFFF:127.000.0.1]'];
  return Array.from({ length: count }, (_, i) =>
    i % 5 === 4 ? (mapped[next(mapped.length)] ?? mapped[0]!) : (splits[next(4)] ?? [1]).map(part).join('.'),
  );
}

describe.skipIf(!canFence)(
  'fence: process proxies reach only what their egress policy allows (real tinyproxy, nftables)',
  () => {
    const logger = createLogger({ write: () => undefined });
    const backends: { name: string; uid: number; backend: RelayBackend; stateDir: string }[] = [];
    let controlPlane: Target;
    let allowed: Target;
    let outside: Target;
    /** The port of the proxy under the local stack's policy, and of one under a list of ports. */
    let local: number;
    let listed: number;

    async function proxyFor(
      name: string,
      policy: EgressPolicy,
      runAsUid: number,
      ports: [number, number],
    ): Promise<number> {
      const stateDir = await mkdtemp(path.join(os.tmpdir(), 'egress-fence-'));
      const backend = createProcessBackend({
        provider: name,
        installationId: 'fence',
        stateDir,
        bindAddresses: ['127.0.0.1'],
        portRange: ports,
        egress: policy,
        runAs: { uid: runAsUid, gid: runAsUid },
        logger,
      });
      backends.push({ name, uid: runAsUid, backend, stateDir });
      const instance = await backend.create({
        name: `${name}-1`,
        proxy: `${name}-1`,
        installationId: 'fence',
        specHash: 'h',
        port: 0,
        placement: {},
        credentials,
      });
      return instance.port;
    }

    beforeAll(async () => {
      [controlPlane, allowed, outside] = await Promise.all([
        target('control plane'),
        target('allowed'),
        target('outside'),
      ]);
      // The local stack's policy: every loopback port but the stack's own (here the control plane's).
      local = await proxyFor('fence-local', localEgressPolicy([controlPlane.port]), uid, [24700, 24709]);
      // A list of ports: the allowed server's only, on loopback.
      listed = await proxyFor(
        'fence-listed',
        egressPolicySchema.parse({ allow: [{ cidr: '127.0.0.0/8', ports: [allowed.port] }] }),
        uid + 1,
        [24710, 24719],
      );
    }, 60_000);

    afterAll(async () => {
      for (const { name, uid: owner, backend, stateDir } of backends) {
        await backend.close();
        await stopAllInstances(stateDir);
        await removeFence(name, owner);
        await rm(stateDir, { recursive: true, force: true });
      }
      await Promise.all([controlPlane, allowed, outside].map((t) => t?.close()));
    });

    it.each([
      ['plain', false],
      ['CONNECT', true],
    ])('%s: an ordinary loopback server stays reachable through both proxies', async (_kind, tunnel) => {
      for (const port of [local, listed]) {
        const ok = await curl(port, `http://127.0.0.1:${allowed.port}/`, tunnel);
        expect(ok).toEqual({ status: 200, body: 'reached allowed' });
      }
    });

    it.each([
      ['plain', false],
      ['CONNECT', true],
    ])("%s: the control plane's loopback port is refused", async (_kind, tunnel) => {
      const refused = await curl(local, `http://127.0.0.1:${controlPlane.port}/`, tunnel);
      expect(refused.body).not.toContain('reached');
      expect(refused.status).not.toBe(200);
    });

    it.each([
      ['plain', false],
      ['CONNECT', true],
    ])('%s: a port outside the allowed list is refused', async (_kind, tunnel) => {
      const refused = await curl(listed, `http://127.0.0.1:${outside.port}/`, tunnel);
      expect(refused.body).not.toContain('reached');
      expect(refused.status).not.toBe(200);
    });

    // The kernel judges the address the name resolved to, so no spelling of it gets through.
    it.each([
      'decimal 2130706433',
      'octal 0177.0.0.1',
      'short 127.1',
      'IPv4-mapped [::ffff:127.0.0.1]',
      'a name: localhost',
    ])('the control plane written as %s is refused, plain and CONNECT', async (form) => {
      const host = form.split(' ').at(-1) ?? '';
      for (const line of [`GET http://${host}:${controlPlane.port}/`, `CONNECT ${host}:${controlPlane.port}`]) {
        const answer = await raw(local, line);
        expect(answer.body, line).not.toContain('reached');
        expect(answer.status, line).not.toBe(200);
      }
    });

    it('20 generated spellings of loopback each reach the allowed server and are refused the control plane', async () => {
      for (const host of loopbackSpellings(20261207, 20)) {
        const reached = await raw(local, `GET http://${host}:${allowed.port}/`);
        expect(reached.body, `${host} names loopback`).toContain('reached allowed');
        for (const line of [`GET http://${host}:${controlPlane.port}/`, `CONNECT ${host}:${controlPlane.port}`]) {
          const answer = await raw(local, line);
          expect(answer.body, line).not.toContain('reached');
          expect(answer.status, line).not.toBe(200);
        }
      }
    });

    it('the same spellings of the allowed server get through (the refusals above are the fence, not the spelling)', async () => {
      for (const host of ['2130706433', '0177.0.0.1', '[::ffff:127.0.0.1]', 'localhost']) {
        const answer = await raw(local, `GET http://${host}:${allowed.port}/`);
        expect(answer.body, host).toContain('reached allowed');
      }
    });
  },
);
