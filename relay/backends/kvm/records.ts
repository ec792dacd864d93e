/**
 * What the relay keeps about each kvm instance: its host and the credentials its proxy requires
 * (the relay probes through it). One file per instance, `<stateDir>/kvm/<provider>/<name>.json`,
 * mode 0600. Everything else is read from libvirt (the domain's metadata).
 */
import { mkdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { dnsLabel } from '../../../shared/domain/names.js';
import { writeFileAtomic } from '../../atomic-file.js';
import { isErrno } from '../../errno.js';

export const kvmRecordSchema = z.object({
  name: dnsLabel,
  host: dnsLabel,
  credentials: z.object({ username: z.string().min(1), password: z.string().min(1) }),
});
export type KvmRecord = z.infer<typeof kvmRecordSchema>;

export class RecordStore {
  private readonly dir: string;
  private ready: Promise<void> | undefined;

  constructor(stateDir: string, provider: string) {
    this.dir = path.resolve(stateDir, 'kvm', provider);
  }

  /** @returns the record, or undefined when there is none or it is unreadable (the caller then searches every host) */
  async read(name: string): Promise<KvmRecord | undefined> {
    if (!dnsLabel.safeParse(name).success) return undefined;
    let text: string;
    try {
      text = await readFile(this.file(name), 'utf8');
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return undefined;
      throw err;
    }
    try {
      const parsed = kvmRecordSchema.safeParse(JSON.parse(text));
      return parsed.success && parsed.data.name === name ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  }

  async write(record: KvmRecord): Promise<void> {
    this.ready ??= mkdir(this.dir, { recursive: true, mode: 0o700 }).then(
      () => undefined,
      (err: unknown) => {
        this.ready = undefined;
        throw err;
      },
    );
    await this.ready;
    await writeFileAtomic(this.file(record.name), `${JSON.stringify(record, null, 2)}\n`);
  }

  async remove(name: string): Promise<void> {
    if (dnsLabel.safeParse(name).success) await rm(this.file(name), { force: true });
  }

  private file(name: string): string {
    return path.join(this.dir, `${name}.json`);
  }
}
