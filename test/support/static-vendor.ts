/**
 * Real tinyproxy processes standing in for a proxy vendor's endpoints (the `static` provider's
 * instances): each on a loopback port of its own with Basic auth, started and stopped by the test.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { egressPolicySchema } from '../../shared/config/egress-policy.js';
import { spawnTinyproxy, tinyproxyConfig, TINYPROXY_PATH } from '../../relay/backends/process/tinyproxy.js';

export interface VendorEndpoint {
  host: string;
  port: number;
  username: string;
  password: string;
  pid: number;
}

export interface Vendor {
  endpoints: VendorEndpoint[];
  /** Kills one endpoint's tinyproxy (SIGKILL), as an endpoint that went down. */
  stop(port: number): void;
  close(): Promise<void>;
}

/** A vendor's endpoint CONNECTs to any port (a range this wide writes no ConnectPort line). */
const ANY_PORT = egressPolicySchema.parse({ ports: [[1, 65535]] });

/** A loopback port free now (the kernel's pick, released at once). */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/** Starts `count` tinyproxies on 127.0.0.1, each requiring `vendor-<i>` / its own password. */
export async function startVendor(count: number): Promise<Vendor> {
  const dir = await mkdtemp(join(tmpdir(), 'static-vendor-'));
  const host = '127.0.0.1';
  const endpoints: VendorEndpoint[] = [];
  const spawnAt = (port: number, credentials: { username: string; password: string }) =>
    spawnTinyproxy(
      {
        program: TINYPROXY_PATH,
        markers: ['static-vendor'],
        config: tinyproxyConfig({ host, port, credentials, egress: ANY_PORT }),
        listen: { host, port },
        configPath: join(dir, `${port}.conf`),
        logPath: join(dir, `${port}.log`),
        timeoutMs: 10_000,
      },
      () => Promise.resolve(),
    );
  for (let i = 0; i < count; i++) {
    const port = await freePort(host);
    const credentials = { username: `vendor-${i}`, password: `pw-${i}-${port}` };
    endpoints.push({ host, port, ...credentials, pid: await spawnAt(port, credentials) });
  }
  const kill = (pid: number) => {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  };
  return {
    endpoints,
    stop(port) {
      const e = endpoints.find((x) => x.port === port);
      if (e) kill(e.pid);
    },
    async close() {
      for (const e of endpoints) kill(e.pid);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
