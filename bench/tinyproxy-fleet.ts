/**
 * One fleet proxy as the fleet runs it now: Debian's tinyproxy with the process backend's own
 * configuration (`tinyproxyConfig`: Basic auth, no Via header), for the gateway bench to compare
 * against. It closes each client connection after its response, as every fleet proxy does.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../infra/local/emulators.js';
import { TINYPROXY_PATH, tinyproxyConfig } from '../relay/backends/process/tinyproxy.js';
import type { ProxyHop } from './gateway-load.js';

export interface TinyproxyFleet {
  hop: ProxyHop;
  pid: number;
  stop(): Promise<void>;
}

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => resolve(true)).once('error', () => resolve(false));
    socket.setTimeout(500, () => socket.destroy());
    socket.once('close', () => resolve(false));
  });

/** @throws Error when tinyproxy is not installed or does not listen within 10 s */
export async function startTinyproxyFleet(): Promise<TinyproxyFleet> {
  const dir = mkdtempSync(join(tmpdir(), 'egress-bench-tinyproxy-'));
  const port = await freePort();
  const credentials = { username: 'bench', password: 'bench-secret' };
  const config = join(dir, 'tinyproxy.conf');
  writeFileSync(config, tinyproxyConfig({ host: '127.0.0.1', port, credentials }));
  const proc = spawn(TINYPROXY_PATH, ['-d', '-c', config], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  for (const deadline = Date.now() + 10_000; !(await listening(port));) {
    if (proc.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`${TINYPROXY_PATH} did not listen on 127.0.0.1:${port} within 10 s`);
    }
    await sleep(50);
  }
  const authorization = `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
  return { hop: { port, authorization }, pid: proc.pid ?? 0, stop };
}
