import { readFile } from 'node:fs/promises';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { listens, listeningRows } from './tinyproxy.js';

const servers: net.Server[] = [];
const sockets: net.Socket[] = [];

async function listen(): Promise<number> {
  const server = net.createServer((socket) => sockets.push(socket));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as net.AddressInfo).port;
}

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  for (const s of servers.splice(0)) await new Promise((resolve) => s.close(resolve));
});

describe.skipIf(process.platform !== 'linux')('listening sockets from /proc', () => {
  it('reads the LISTEN rows of a table, all of them, and no other row', async () => {
    const port = await listen();
    // Connections in the table too, after the listeners.
    for (let i = 0; i < 3; i++) {
      const client = net.connect(port, '127.0.0.1');
      sockets.push(client);
      await new Promise((resolve) => client.once('connect', resolve));
    }
    const hexPort = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
    const rows = listeningRows('/proc/self/net/tcp');
    const full = (await readFile('/proc/self/net/tcp', 'latin1'))
      .split('\n')
      .slice(1)
      .filter((line) => line.trim() !== '')
      .map((line) => line.trim().split(/\s+/));
    expect(full.some((cols) => cols[1]?.endsWith(hexPort) && cols[3] === '01')).toBe(true);
    expect(rows.every((cols) => cols[3] === '0A')).toBe(true);
    expect(rows.map((cols) => cols[9]).sort()).toEqual(
      full
        .filter((cols) => cols[3] === '0A')
        .map((cols) => cols[9])
        .sort(),
    );
    expect(rows.some((cols) => cols[1]?.endsWith(hexPort))).toBe(true);
    expect(listeningRows('/proc/self/net/no-such-table')).toEqual([]);
  });

  it('a process listens on a port only when the listening socket is its own', async () => {
    const port = await listen();
    expect(await listens(process.pid, '127.0.0.1', port)).toBe(true);
    const free = await listen();
    await new Promise((resolve) => servers.pop()?.close(resolve));
    expect(await listens(process.pid, '127.0.0.1', free)).toBe(false);
    // pid 1 holds no socket of ours.
    expect(await listens(1, '127.0.0.1', port)).toBe(false);
  });
});
