/**
 * The guest side of a fake VM: what cloud-init would do with the instance's `user-data`, done for
 * real: the tinyproxy.conf it writes, run by Debian's tinyproxy on the VM's loopback address
 * (`../guest-proxy.ts`), so "reachable through the proxy with its credentials" is a fact and not a stub.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { z } from 'zod';
import { certificateArgs, GUEST_STUNNEL, stunnelConfig } from '../../../shared/providers/stunnel.js';
import { configuredPort, startGuestProxy, type ListeningGuest } from '../guest-proxy.js';
import { startNat, type Nat } from './nat.js';

/** What a user-data makes the guest serve. */
export interface GuestProxyConfig {
  /** The tinyproxy.conf cloud-init writes, as the product generated it. */
  tinyproxyConf: string;
  /** Its `Port`: where the NAT forwards. */
  port: number;
  /** The guest attribute the guest sets once the proxy serves (`curl -X PUT … guest-attributes/<key>`). */
  readyAttribute?: ReadyAttribute | undefined;
  /** The TLS listener's port, when the user-data writes and starts one in front of the proxy. */
  tlsPort?: number | undefined;
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
  const port = configuredPort(file.content);
  return {
    tinyproxyConf: file.content,
    port,
    readyAttribute: readinessOf(commands, doc.write_files ?? []),
    tlsPort: tlsListenerOf(commands, doc.write_files ?? [], port),
  };
}

/**
 * The port of the TLS listener (stunnel) the user-data sets up, when it writes its configuration
 * and (re)starts its unit: stunnel's `accept` (its `connect` must be the proxy's port on loopback).
 *
 * @throws Error when the listener would forward somewhere other than the proxy
 */
function tlsListenerOf(commands: string[], files: { path: string; content?: string | undefined }[], port: number) {
  const conf = files.find((f) => f.path === GUEST_STUNNEL.conf)?.content;
  if (!conf || !commands.some((c) => c === `systemctl restart ${GUEST_STUNNEL.unit}`)) return undefined;
  const accept = Number(/^accept = [\d.]+:(\d+)$/m.exec(conf)?.[1]);
  const forward = /^connect = (\S+)$/m.exec(conf)?.[1];
  if (forward !== `127.0.0.1:${port}`)
    throw new Error(`stunnel forwards to ${forward}, not the proxy's 127.0.0.1:${port}`);
  if (!Number.isInteger(accept) || accept < 1 || accept > 65535)
    throw new Error('stunnel.conf accepts on no valid port');
  return accept;
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
    let proxy: ListeningGuest | undefined;
    let nat: Nat | undefined;
    let tls: { child: ChildProcess; nat: Nat } | undefined;
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
      const { tlsPort } = config;
      if (tlsPort === undefined) return;
      const listener = await this.startTls(instance, internal, config.port, tlsPort);
      tls = { child: listener, nat: await startNat(external, internal, tlsPort) };
    });
    let stopped: Promise<void> | undefined;
    const stop = async () => {
      await ready.catch(() => undefined);
      await nat?.close();
      await tls?.nat.close();
      if (tls && tls.child.exitCode === null) {
        const exited = new Promise<void>((resolve) => tls?.child.once('exit', () => resolve()));
        tls.child.kill('SIGTERM');
        await exited;
      }
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

  /**
   * What the user-data's stunnel does on a guest, for real (Debian's stunnel4): a certificate made
   * on this "guest" (kept across its reboots: the first boot's `test -s key ||`), listening on the
   * internal address and forwarding to the proxy there.
   */
  private async startTls(instance: string, internal: string, port: number, tlsPort: number): Promise<ChildProcess> {
    const cert = join(this.dir, `${instance}.pem`);
    const key = join(this.dir, `${instance}.key`);
    const conf = join(this.dir, `${instance}-stunnel.conf`);
    await promisify(execFile)('sh', ['-c', `test -s ${key} || openssl ${certificateArgs(cert, key).join(' ')}`]);
    await writeFile(
      conf,
      stunnelConfig({ accept: `${internal}:${tlsPort}`, connect: `${internal}:${port}`, cert, key }),
    );
    const child = spawn('/usr/bin/stunnel4', [conf, `--gce-fake=${this.marker}`], { stdio: 'ignore' });
    for (let i = 0; ; i++) {
      if (child.exitCode !== null) throw new Error(`stunnel of ${instance} exited with ${child.exitCode}`);
      const up = await new Promise<boolean>((resolve) => {
        const s = connect({ host: internal, port: tlsPort }, () => resolve(s.destroy() !== undefined));
        s.once('error', () => resolve(false));
      });
      if (up) return child;
      if (i >= 100) throw new Error(`stunnel of ${instance} does not listen on ${internal}:${tlsPort}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Stops every guest (waiting for those already stopping) and removes their files. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.running].map((g) => g.stop()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
