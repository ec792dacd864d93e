/**
 * A target that is not on this host's loopback, for tests on a machine without the Internet: a
 * network namespace made for the run, a veth pair (this side 10.215.N.1, the namespace 10.215.N.2)
 * and an echo server inside it that answers every GET with `{"ip": "<caller address>"}`, like the
 * project's echo endpoint. Needs root and iproute2. Everything is removed by `close()`.
 */
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';

import { createVethNetns } from './veth-netns.js';

const run = promisify(execFile);

export interface RemoteTarget {
  /** The echo server's URL inside the namespace (`http://10.215.N.2:8080/`). */
  url: string;
  /** This host's address on the veth pair: what the target sees a connection from the host come from. */
  hostIp: string;
  close(): Promise<void>;
}

const SERVER = `
const http = require('node:http');
const server = http.createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ ip: req.socket.remoteAddress.replace(/^::ffff:/, '') }));
});
server.listen(Number(process.argv[2]), process.argv[1], () => process.stdout.write('ready\\n'));
`;

/** A free index N: no address in 10.215.N.0/24 and no namespace `egr<N>` yet. */
async function freeIndex(): Promise<number> {
  const { stdout: addresses } = await run('ip', ['-o', 'addr'], { encoding: 'utf8' });
  const { stdout: spaces } = await run('ip', ['netns', 'list'], { encoding: 'utf8' });
  const names = new Set(spaces.split('\n').map((line) => line.split(' ')[0]));
  for (let tries = 0; tries < 100; tries++) {
    const n = 1 + Math.floor(Math.random() * 250);
    if (!addresses.includes(`10.215.${n}.`) && !names.has(`egr${n}`)) return n;
  }
  throw new Error('no free test subnet in 10.215.0.0/16');
}

/** Starts the namespace and its echo server; resolves once the server listens. */
export async function startRemoteTarget(): Promise<RemoteTarget> {
  const n = await freeIndex();
  const [netns, hostIf, nsIf] = [`egr${n}`, `egr${n}h`, `egr${n}n`];
  const [hostIp, nsIp, port] = [`10.215.${n}.1`, `10.215.${n}.2`, 8080];
  let server: ReturnType<typeof spawn> | undefined;
  const close = async () => {
    server?.kill('SIGKILL');
    await run('ip', ['netns', 'del', netns]).catch(() => undefined);
    await run('ip', ['link', 'del', hostIf]).catch(() => undefined);
  };
  try {
    await createVethNetns({ netns, hostIf, nsIf, hostIp, nsIp });
    // `ip netns exec` execs node: the child's pid is the server's.
    const child = spawn('ip', ['netns', 'exec', netns, process.execPath, '-e', SERVER, nsIp, String(port)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    server = child;
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('ready')) resolve();
      });
      child.once('error', reject);
      child.once('exit', (code) => reject(new Error(`echo server in ${netns} exited (code ${code ?? '?'})`)));
    });
    return { url: `http://${nsIp}:${port}/`, hostIp, close };
  } catch (err) {
    await close();
    throw err;
  }
}
