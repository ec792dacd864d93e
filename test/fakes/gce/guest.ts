/**
 * The guest side of a fake VM: what cloud-init would do with the instance's `user-data`, done for
 * real: the tinyproxy.conf it writes, run by Debian's tinyproxy on the VM's loopback address
 * (`../guest-proxy.ts`), so "reachable through the proxy with its credentials" is a fact and not a stub.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';
import { configuredPort, startGuestProxy, type GuestProxy } from '../guest-proxy.js';
import { startNat, type Nat } from './nat.js';

/** What a user-data makes the guest serve. */
export interface GuestProxyConfig {
  /** The tinyproxy.conf cloud-init writes, as the product generated it. */
  tinyproxyConf: string;
  /** Its `Port`: where the NAT forwards. */
  port: number;
  /** The guest attribute the guest sets once the proxy serves (`curl -X PUT … guest-attributes/<key>`). */
  readyAttribute?: ReadyAttribute | undefined;
}

/** How the guest sets its readiness attribute. */
export interface ReadyAttribute {
  key: string;
  value: string;
  /** PUTs the guest makes before it gives up (a `for … in $(seq 1 N)` loop around the curl, else 1). */
  attempts: number;
  /** Set on the first boot (runcmd runs the PUT, or starts the unit that does). */
  firstBoot: boolean;
  /** Set on every later boot: an enabled systemd unit wanted by multi-user.target runs it (runcmd runs once per instance). */
  everyBoot: boolean;
}

const TINYPROXY_CONF = '/etc/tinyproxy/tinyproxy.conf';

const cloudConfigSchema = z.object({
  packages: z.array(z.union([z.string(), z.array(z.string())])).optional(),
  write_files: z
    .array(z.object({ path: z.string(), content: z.string().optional(), defer: z.boolean().optional() }))
    .optional(),
  runcmd: z.array(z.union([z.string(), z.array(z.string())])).optional(),
});

/**
 * Reads a user-data document as cloud-init and tinyproxy would.
 *
 * @throws Error saying why the guest would come up without a working proxy
 */
export function parseUserData(userData: string): GuestProxyConfig {
  if (!userData.startsWith('#cloud-config\n')) throw new Error('user-data is not a #cloud-config document');
  const doc = cloudConfigSchema.parse(parse(userData));
  const packages = (doc.packages ?? []).map((p) => (Array.isArray(p) ? p[0] : p));
  if (!packages.includes('tinyproxy')) throw new Error('cloud-config does not install the tinyproxy package');
  const file = doc.write_files?.find((f) => f.path === TINYPROXY_CONF);
  if (!file?.content) throw new Error(`cloud-config writes no ${TINYPROXY_CONF}`);
  const commands = (doc.runcmd ?? []).map((c) => [c].flat().join(' '));
  const restart = commands.find((c) => c.includes('restart tinyproxy'));
  if (!restart) throw new Error('cloud-config never restarts tinyproxy with the written configuration');
  return {
    tinyproxyConf: file.content,
    port: configuredPort(file.content),
    readyAttribute: readinessOf(commands, doc.write_files ?? []),
  };
}

const PUT = /--data (\S+).*guest-attributes\/([\w/-]+)/;

/**
 * How the user-data sets its readiness attribute: a runcmd that PUTs it (once, first boot only:
 * cloud-init's runcmd is per instance), or a runcmd that enables (and starts) a systemd unit whose
 * ExecStart script PUTs it, as many times as its `seq 1 N` loop says, on every boot.
 */
function readinessOf(commands: string[], files: { path: string; content?: string | undefined }[]) {
  const direct = commands.map((c) => PUT.exec(c)).find(Boolean);
  if (direct?.[1] && direct[2])
    return { key: direct[2], value: direct[1], attempts: 1, firstBoot: true, everyBoot: false };
  const content = (path: string) => files.find((f) => f.path === path)?.content ?? '';
  for (const command of commands) {
    const unit = /^systemctl (?:--now )?enable (?:--now )?(\S+\.service)$/.exec(command)?.[1];
    const text = unit ? content(`/etc/systemd/system/${unit}`) : '';
    const script = content(/^ExecStart=(\S+)/m.exec(text)?.[1] ?? '');
    const put = PUT.exec(script);
    if (!unit || !put?.[1] || !put[2]) continue;
    const started = command.includes('--now') || commands.some((c) => /^systemctl start /.test(c) && c.endsWith(unit));
    const attempts = Number(/\$\(seq 1 (\d+)\)/.exec(script)?.[1] ?? 1);
    const everyBoot = /^WantedBy=multi-user\.target$/m.test(text);
    return { key: put[2], value: put[1], attempts, firstBoot: started, everyBoot };
  }
  return undefined;
}

/** A running guest proxy. */
export interface GuestProcess {
  pid: number | undefined;
  /** Resolves once the proxy listens on the internal address and the NAT on the external one (rejects when either cannot). */
  ready: Promise<void>;
  /** Connections that reached the proxy through the external address (the NAT), not the internal one. */
  readonly externalConnections: number;
  stop(): Promise<void>;
}

/** A VM's two addresses: the guest listens on `internal`; `external` reaches it through the NAT. */
export interface GuestAddresses {
  internal: string;
  external: string;
}

/**
 * Starts and stops guest proxies: one tinyproxy per running VM, marked with `--gce-fake=<id>` so a
 * test can find them.
 */
export class GuestRunner {
  private readonly dir = mkdtempSync(join(tmpdir(), 'egress-gce-fake-'));
  /** Every guest started and not yet stopped (one being stopped stays until its process is gone). */
  private readonly running = new Set<GuestProcess>();
  private closed = false;

  constructor(readonly marker: string) {}

  /**
   * Starts a proxy for `instance` on its internal address with the config from its user-data, and
   * the NAT from its external address. After {@link close} (a reset's boot that comes after the
   * fake closed) nothing starts: the guest's `ready` rejects.
   */
  start(instance: string, addresses: GuestAddresses, config: GuestProxyConfig): GuestProcess {
    let proxy: GuestProxy | undefined;
    let nat: Nat | undefined;
    const { internal, external } = addresses;
    const started = this.closed
      ? Promise.reject(new Error(`guest proxy of ${instance} not started: the fake is closed`))
      : startGuestProxy({
          name: instance,
          config: config.tinyproxyConf,
          listen: internal,
          // The external address as the source of outgoing connections: the NAT's outbound side,
          // so each VM egresses from its external IP.
          bind: external,
          markers: [`--gce-fake=${this.marker}`],
          dir: this.dir,
        });
    const ready = started.then(async (p) => {
      proxy = p;
      nat = await startNat(external, internal, config.port);
    });
    let stopped: Promise<void> | undefined;
    const stop = async () => {
      await ready.catch(() => undefined);
      await nat?.close();
      if (proxy) {
        const running = proxy;
        running.kill('SIGTERM');
        const timer = setTimeout(() => running.kill('SIGKILL'), 2000);
        await running.exited;
        clearTimeout(timer);
      }
      this.running.delete(guest);
    };
    const guest: GuestProcess = {
      get pid() {
        return proxy?.pid;
      },
      ready,
      get externalConnections() {
        return nat?.connections ?? 0;
      },
      // One stop however many ask (a halt, then close): close waits for one already under way.
      stop: () => (stopped ??= stop()),
    };
    ready.catch(() => undefined);
    this.running.add(guest);
    return guest;
  }

  /** Stops every guest (waiting for those already stopping) and removes their files. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.running].map((g) => g.stop()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
