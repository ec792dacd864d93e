import { createServer, type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { connect } from './connect.js';
import { LibvirtCancelledError, LibvirtConnectionLostError, LibvirtUriError } from './errors.js';

/** A loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('libvirt client: connect', () => {
  it.each([
    [{ timeoutMs: 0 }, /timeoutMs must be a positive number, got 0/],
    [{ callTimeoutMs: -1 }, /callTimeoutMs must be a positive number/],
    [{ keepalive: { intervalMs: Number.NaN } }, /keepalive.intervalMs must be a positive number/],
    [{ keepalive: { count: 0 } }, /keepalive.count must be an integer ≥ 1, got 0/],
  ])('rejects bad options before dialling: %o', async (options, message) => {
    await expect(connect('test+tcp://127.0.0.1:1/default', options)).rejects.toThrow(message);
  });

  it('rejects a bad URI with the part named', async () => {
    await expect(connect('qemu+udp://h/system')).rejects.toBeInstanceOf(LibvirtUriError);
  });

  it('cancels the dial through its signal with the typed error', async () => {
    const controller = new AbortController();
    controller.abort(new Error('shutting down'));
    const error = await connect('test+tcp://127.0.0.1:1/default', { signal: controller.signal }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(LibvirtCancelledError);
    expect((error as Error).cause).toMatchObject({ message: 'shutting down' });
  });

  it('fails with the connection error when nothing listens', async () => {
    const error = await connect(`test+tcp://127.0.0.1:${await closedPort()}/default`).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LibvirtConnectionLostError);
    expect(String(error)).toMatch(/ECONNREFUSED/);
  });
});
