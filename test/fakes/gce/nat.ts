/**
 * The 1:1 NAT in front of a fake VM: its external address (`natIP`) forwards to the internal one
 * (`networkIP`), where the guest's proxy listens. A VM's interface always has an internal IPv4
 * address and an external one only through an access config
 * (https://cloud.google.com/compute/docs/ip-addresses); the guest sees only the internal one, and
 * Google's network translates between them, "from Compute Engine instance's external address to
 * internal address" inbound and back outbound (NatInfo.Type EXTERNAL_TO_INTERNAL and
 * INTERNAL_TO_EXTERNAL,
 * https://cloud.google.com/ruby/docs/reference/google-cloud-network_management-v1/latest/Google-Cloud-NetworkManagement-V1-NatInfo-Type;
 * the guest's proxy egresses from `natIP` for the latter).
 */
import net from 'node:net';

/** A listening NAT: how many connections came in through the external address. */
export interface Nat {
  readonly connections: number;
  close(): Promise<void>;
}

/**
 * Forwards `external:port` to `internal:port`, byte for byte, until closed.
 *
 * @throws Error when the external address cannot be bound
 */
export async function startNat(external: string, internal: string, port: number): Promise<Nat> {
  let connections = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((inbound) => {
    connections += 1;
    const outbound = net.connect({ host: internal, port });
    for (const s of [inbound, outbound]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      // A reset on one side resets the other, as a translated connection would.
      s.on('error', () => (s === inbound ? outbound : inbound).destroy());
    }
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, external, () => resolve());
  });
  return {
    get connections() {
      return connections;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
