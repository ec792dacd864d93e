/**
 * One fleet proxy as the fleet runs it now: Debian's tinyproxy, started the way the process backend
 * starts each proxy (`spawnTinyproxy` with `tinyproxyConfig`: Basic auth, no Via header), for the
 * gateway bench to compare against. It closes each client connection after its response, as every
 * fleet proxy does.
 */
import { localEgressPolicy } from '../shared/config/egress-policy.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../infra/local/emulators.js';
import { terminate } from '../relay/backends/process/processes.js';
import { spawnTinyproxy, TINYPROXY_PATH, tinyproxyConfig } from '../relay/backends/process/tinyproxy.js';
import type { ProxyHop } from './gateway-load.js';

export interface TinyproxyFleet {
  hop: ProxyHop;
  stop(): Promise<void>;
}

/**
 * @param maxClients - connections it serves at once (the fleet's proxies: 200)
 * @throws Error (from `spawnTinyproxy`) when tinyproxy does not listen within 10 s
 */
export async function startTinyproxyFleet(maxClients?: number): Promise<TinyproxyFleet> {
  const dir = mkdtempSync(join(tmpdir(), 'egress-bench-tinyproxy-'));
  const listen = { host: '127.0.0.1', port: await freePort() };
  const credentials = { username: 'bench', password: 'bench-secret' };
  const markers = [`egress-bench-tinyproxy=${dir}`];
  let pid = 0;
  const stop = async () => {
    if (pid) await terminate(pid, markers);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const options = {
      program: TINYPROXY_PATH,
      markers,
      config: tinyproxyConfig({ ...listen, credentials, egress: localEgressPolicy([]), maxClients }),
      listen,
      configPath: join(dir, 'tinyproxy.conf'),
      logPath: join(dir, 'tinyproxy.log'),
      timeoutMs: 10_000,
    };
    pid = await spawnTinyproxy(options, (p) => Promise.resolve(void (pid = p)));
  } catch (err) {
    await stop();
    throw err;
  }
  const authorization = `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
  return { hop: { port: listen.port, authorization }, stop };
}
