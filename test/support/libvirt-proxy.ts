/** A loopback TCP proxy in front of a libvirtd that records every packet and can hold replies or cut connections. */
import { createServer, connect as netConnect, type AddressInfo, type Socket } from 'node:net';
import { PacketDecoder } from '../../relay/libvirt/packet.js';

/** One packet seen by the proxy; `up` is client → daemon. */
export interface SeenPacket {
  direction: 'up' | 'down';
  program: number;
  procedure: number;
  type: number;
  serial: number;
  status: number;
}

/** A running proxy. */
export interface LibvirtProxy {
  port: number;
  /** Every packet in the order the proxy forwarded (or held) it. */
  seen: SeenPacket[];
  /** Stops forwarding daemon → client bytes (they are buffered) until {@link release}. */
  hold(): void;
  /** Forwards what was held and resumes. */
  release(): void;
  /** Destroys every proxied connection (both sides), as a dropped network would. */
  cut(): void;
  close(): Promise<void>;
}

/**
 * Starts a proxy on a free loopback port forwarding to `127.0.0.1:targetPort`.
 * @example `const proxy = await startLibvirtProxy(daemon.tcpPort); connect(\`test+tcp://127.0.0.1:${proxy.port}/default\`)`
 */
export async function startLibvirtProxy(targetPort: number): Promise<LibvirtProxy> {
  const seen: SeenPacket[] = [];
  const sockets = new Set<Socket>();
  const held: Array<() => void> = [];
  let holding = false;

  const record = (direction: SeenPacket['direction'], decoder: PacketDecoder, chunk: Buffer): void => {
    for (const { program, procedure, type, serial, status } of decoder.push(chunk)) {
      seen.push({ direction, program, procedure, type, serial, status });
    }
  };

  const server = createServer((client) => {
    const daemon = netConnect({ host: '127.0.0.1', port: targetPort });
    sockets.add(client).add(daemon);
    const up = new PacketDecoder();
    const down = new PacketDecoder();
    client.on('data', (chunk: Buffer) => {
      record('up', up, chunk);
      daemon.write(chunk);
    });
    daemon.on('data', (chunk: Buffer) => {
      const forward = (): void => {
        record('down', down, chunk);
        if (!client.destroyed) client.write(chunk);
      };
      if (holding) held.push(forward);
      else forward();
    });
    const end = (): void => {
      client.destroy();
      daemon.destroy();
      sockets.delete(client);
      sockets.delete(daemon);
    };
    for (const socket of [client, daemon]) {
      socket.on('close', end);
      socket.on('error', end);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  return {
    port: (server.address() as AddressInfo).port,
    seen,
    hold: () => void (holding = true),
    release: () => {
      holding = false;
      for (const forward of held.splice(0)) forward();
    },
    cut: () => {
      for (const socket of sockets) socket.destroy();
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
