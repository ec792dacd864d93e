/**
 * Per-instance files of the process backend: state `<stateDir>/instances/<name>.json` (written
 * atomically), tinyproxy config `conf/<name>.conf` and log `logs/<name>.log`, its TLS listener's
 * `tls/<name>.{conf,pem,key,log}`; a provider's forwarder has `forwarders/<provider>.{json,conf,log}`.
 */
import { statSync } from 'node:fs';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { dnsLabel } from '../../../shared/domain/names.js';
import type { InstanceSpec } from '../../../shared/providers/contract.js';
import { writeFileAtomic } from '../../atomic-file.js';
import { isErrno } from '../../errno.js';

export const instanceRecordSchema = z.object({
  name: dnsLabel,
  /** The provider (backend) that owns it: several process backends may share one state directory. */
  provider: dnsLabel,
  proxy: dnsLabel,
  installationId: dnsLabel,
  specHash: z.string().max(64),
  /** The address the process listens on. */
  host: z.string().min(1),
  port: z.number().int().min(1).max(65535),
  pid: z.number().int().positive(),
  /** Epoch ms; never zero (contract rule created-at-nonzero). */
  createdAt: z.number().int().positive(),
  credentials: z.object({ username: z.string().min(1), password: z.string().min(1) }),
  /** The source address of its outgoing connections (its egress IP), when the provider has a range. */
  egressAddress: z.string().min(1).optional(),
  /** Its TLS listener (stunnel) on `host`: the port, and the pid once it runs. */
  tlsPort: z.number().int().min(1).max(65535).optional(),
  tlsPid: z.number().int().positive().optional(),
});
/** What the backend remembers about one instance. The file is mode 0600: it holds credentials. */
export type InstanceRecord = z.infer<typeof instanceRecordSchema>;

/**
 * The record of an instance about to start (its pid is written once the process exists).
 *
 * @param where - where it listens and its egress address (absent: none of its own)
 */
export function newInstanceRecord(
  spec: InstanceSpec,
  provider: string,
  where: { host: string; port: number; source: string | undefined },
): InstanceRecord {
  const { name, proxy, installationId, specHash, credentials } = spec;
  const egress = where.source !== undefined ? { egressAddress: where.source } : {};
  const { host, port } = where;
  return {
    name,
    provider,
    proxy,
    installationId,
    specHash,
    host,
    port,
    pid: 1,
    createdAt: Date.now(),
    credentials,
    ...egress,
  };
}

/** The outcome of reading one state file. */
export type ReadResult =
  { kind: 'missing' } | { kind: 'corrupt'; error: string } | { kind: 'ok'; record: InstanceRecord };

/** The files of one state directory (`root` must already be absolute and resolved). */
export class StateStore {
  readonly instancesDir: string;
  readonly logsDir: string;
  readonly confDir: string;
  readonly forwardersDir: string;
  readonly tlsDir: string;
  /**
   * Records this store has read or written, by name: {@link StateStore.takenBy} reads only the
   * others, and {@link StateStore.read} reads a file again only when its stamp changed (a record
   * this store wrote has none until it is read back).
   */
  private readonly known = new Map<string, { record: InstanceRecord; stamp: string | undefined }>();

  constructor(readonly root: string) {
    this.instancesDir = path.join(root, 'instances');
    this.logsDir = path.join(root, 'logs');
    this.confDir = path.join(root, 'conf');
    this.forwardersDir = path.join(root, 'forwarders');
    this.tlsDir = path.join(root, 'tls');
  }

  /** Creates the directories (mode 0700). */
  async init(): Promise<void> {
    for (const dir of [this.instancesDir, this.logsDir, this.confDir, this.forwardersDir, this.tlsDir])
      await mkdir(dir, { recursive: true, mode: 0o700 });
  }

  /** Where an instance's tinyproxy config is written (mode 0600: it holds the password). */
  confPath(name: string): string {
    return path.join(this.confDir, `${name}.conf`);
  }

  /** Where an instance's process writes its stderr. */
  logPath(name: string): string {
    return path.join(this.logsDir, `${name}.log`);
  }

  /** The files of an instance's TLS listener: config, certificate, key (mode 0600, never leaves this host), log. */
  tlsPaths(name: string): { conf: string; cert: string; key: string; log: string } {
    const base = path.join(this.tlsDir, name);
    return { conf: `${base}.conf`, cert: `${base}.pem`, key: `${base}.key`, log: `${base}.log` };
  }

  /** The files of a provider's forwarder: its pid record, its config and its log. */
  forwarderPaths(provider: string): { record: string; conf: string; log: string } {
    const base = path.join(this.forwardersDir, provider);
    return { record: `${base}.json`, conf: `${base}.conf`, log: `${base}.log` };
  }

  private statePath(name: string): string {
    return path.join(this.instancesDir, `${name}.json`);
  }

  /**
   * Reads one instance's state; a name that is not a DNS-1123 label is simply missing. A file
   * whose stamp is the one it had when last read is not read again: every probe round and report
   * lists every instance, and reading and checking each file each time was a quarter of the
   * relay's CPU during a ramp.
   */
  async read(name: string): Promise<ReadResult> {
    if (!dnsLabel.safeParse(name).success) return { kind: 'missing' };
    // Taken before the read: a file replaced while it is read gets a new stamp, so it is read again next time.
    const stamp = this.stampOf(name);
    const known = this.known.get(name);
    if (known && stamp !== undefined && known.stamp === stamp) return { kind: 'ok', record: known.record };
    this.known.delete(name);
    let text: string;
    try {
      text = await readFile(this.statePath(name), 'utf8');
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return { kind: 'missing' };
      return { kind: 'corrupt', error: errorMessage(err) };
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (err) {
      return { kind: 'corrupt', error: `not JSON: ${errorMessage(err)}` };
    }
    const parsed = instanceRecordSchema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return { kind: 'corrupt', error: `${(issue?.path ?? []).join('.') || '(file)'}: ${issue?.message ?? 'invalid'}` };
    }
    if (parsed.data.name !== name)
      return { kind: 'corrupt', error: `name is "${parsed.data.name}", expected "${name}"` };
    this.known.set(name, { record: parsed.data, stamp });
    return { kind: 'ok', record: parsed.data };
  }

  /**
   * What identifies the version of a state file on disk, or `undefined` when it cannot be told
   * (then the file is read). A write by rename brings a new inode; an edit in place changes the
   * size or the modification and change times. One `stat` call: a few microseconds, where the
   * read it saves took open, stat, read and close through the thread pool, then a parse.
   */
  private stampOf(name: string): string | undefined {
    try {
      const s = statSync(this.statePath(name), { bigint: true, throwIfNoEntry: false });
      return s && `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
    } catch {
      return undefined;
    }
  }

  /** Writes one instance's state atomically with mode 0600. */
  async write(record: InstanceRecord): Promise<void> {
    await writeFileAtomic(this.statePath(record.name), `${JSON.stringify(record, null, 2)}\n`);
    this.known.set(record.name, { record, stamp: undefined });
  }

  /** Removes an instance's state and config files only (its log stays for diagnosis); missing is fine. */
  async removeRecord(name: string): Promise<void> {
    if (!dnsLabel.safeParse(name).success) return;
    this.known.delete(name);
    await rm(this.statePath(name), { force: true });
    await rm(this.confPath(name), { force: true });
  }

  /**
   * Removes an instance's state, config and log files, and its TLS listener's files: the next
   * instance of the name makes a certificate of its own. Missing files are fine.
   */
  async remove(name: string): Promise<void> {
    await this.removeRecord(name);
    if (!dnsLabel.safeParse(name).success) return;
    await rm(this.logPath(name), { force: true });
    for (const file of Object.values(this.tlsPaths(name))) await rm(file, { force: true });
  }

  /** Every state file, read; a missing directory means none. */
  async readAll(): Promise<Array<{ name: string; result: ReadResult }>> {
    return Promise.all(
      (await this.names()).map(async (name): Promise<{ name: string; result: ReadResult }> =>
        dnsLabel.safeParse(name).success
          ? { name, result: await this.read(name) }
          : { name, result: { kind: 'corrupt', error: 'file name is not a DNS-1123 label' } },
      ),
    );
  }

  /** What the other instances hold (`self` left out): their ports (port → name) and egress addresses. */
  async takenBy(self: string): Promise<{ ports: Map<number, string>; egress: Set<string> }> {
    const ports = new Map<number, string>();
    const egress = new Set<string>();
    for (const name of await this.names()) {
      if (name === self) continue;
      // Each allocation asks this: reading every file each time made N creates cost N² reads.
      const known = this.known.get(name)?.record;
      const result = known ? undefined : await this.read(name);
      const record = known ?? (result?.kind === 'ok' ? result.record : undefined);
      if (!record) continue;
      ports.set(record.port, name);
      if (record.tlsPort !== undefined) ports.set(record.tlsPort, name);
      if (record.egressAddress) egress.add(record.egressAddress);
    }
    return { ports, egress };
  }

  /** The names of the state files (`.json`); a missing directory means none. */
  private async names(): Promise<string[]> {
    let files: string[];
    try {
      files = await readdir(this.instancesDir);
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return [];
      throw err;
    }
    return files.filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -'.json'.length));
  }
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
