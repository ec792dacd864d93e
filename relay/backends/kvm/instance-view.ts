/** What a kvm domain of ours looks like as a contract `Instance`: its state, address and readiness. */
import type { Logger } from '../../../shared/logger.js';
import type { Instance } from '../../../shared/providers/contract.js';
import { backendCall } from '../../../shared/telemetry/spans.js';
import { attrs, type Found, type KvmHosts } from './hosts.js';
import { firstAddress, instanceState, isActive } from './observe.js';
import { guestTlsPort } from '../../../shared/providers/stunnel.js';
import { guestSaysReady } from './readiness.js';

/** Observes domains; remembers which incarnations said they were ready. */
export class InstanceViewer {
  /** Domain incarnations whose guest said its proxy serves (see {@link signalledReady}). */
  private readonly ready = new Set<string>();

  constructor(
    private readonly hosts: KvmHosts,
    private readonly opts: { logger: Logger; now: () => number; startupGraceMs: number },
  ) {}

  async observe(found: Found): Promise<Instance> {
    const { host, conn, domain, metadata } = found;
    const { state } = await this.hosts.call('libvirt.domainGetState', host, domain.name, () =>
      conn.getDomainState(domain),
    );
    const address = isActive(state)
      ? await firstAddress((source) =>
          this.hosts.call('libvirt.domainInterfaceAddresses', host, domain.name, () =>
            conn.getInterfaceAddresses(domain, source),
          ),
        )
      : undefined;
    const booting = address !== undefined && !(await this.signalledReady(found));
    return {
      name: domain.name,
      proxy: metadata.proxy,
      installationId: metadata.installationId,
      specHash: metadata.specHash,
      state: booting ? 'Pending' : instanceState(state, address !== undefined),
      ip: address?.ip ?? '',
      port: metadata.port,
      // The seed's stunnel listens on the next port (its create refused a port without one).
      tlsPort: guestTlsPort(metadata.port),
      createdAt: metadata.createdAt,
    };
  }

  /**
   * With `readySignal: agent`, whether the guest said its proxy serves; remembered per domain
   * incarnation, so a ready guest costs no agent call. Past the startup grace a silent guest counts
   * as ready: the probes judge it (and fail it, when its proxy never came up).
   */
  private async signalledReady(found: Found): Promise<boolean> {
    const { host, conn, domain, metadata } = found;
    if (this.hosts.hostConfig(host).readySignal === 'none') return true;
    const key = `${host}/${Buffer.from(domain.uuid).toString('hex')}/${metadata.createdAt}`;
    if (this.ready.has(key)) return true;
    const said = await backendCall('libvirt.qemuDomainAgentCommand', attrs(host, domain.name), () =>
      guestSaysReady(conn, domain, { instance: domain.name, port: metadata.port }),
    );
    if (said) {
      this.ready.add(key);
      this.opts.logger.info('guest says its proxy serves', { instance: domain.name, host });
      return true;
    }
    return this.opts.now() - metadata.createdAt >= this.opts.startupGraceMs;
  }
}
