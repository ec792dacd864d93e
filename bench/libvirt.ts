/**
 * State look-ups on a real libvirtd: N `getDomainState` calls pipelined on one connection of the
 * TypeScript client versus the same look-ups through `virsh -c URI domstate NAME`, one process each.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { connect, DomainState } from '../relay/libvirt/index.js';
import { startLibvirtd, type Libvirtd } from '../test/support/libvirtd.js';

const run = promisify(execFile);

/** Options of {@link benchLibvirt}. */
export interface LibvirtBenchOptions {
  /** A running daemon; default: one is started (and stopped) for the run. */
  daemon?: Libvirtd;
  /** Look-ups per side; default 500. */
  count?: number;
  /**
   * How many `virsh` processes actually run; the time is scaled to `count`. Default: all of them
   * (`count`). Each costs a process start, a connection and a handshake: about 40 ms on a 2-core machine.
   */
  virshSample?: number;
}

/** Times of one run. */
export interface LibvirtBenchResult {
  count: number;
  /** Wall time of `count` pipelined look-ups on one open connection (the dial not included). */
  pipelinedMs: number;
  /** Wall time of `count` sequential `virsh domstate` runs (measured, or scaled from `virshSample`). */
  virshMs: number;
  /** How many virsh runs were measured (the rest is scaled). */
  virshSampled: number;
  /** virshMs / pipelinedMs. */
  ratio: number;
}

/**
 * Runs the comparison against the test driver's `test` domain.
 * @example `const { pipelinedMs, virshMs, ratio } = await benchLibvirt({ virshSample: 100 });`
 */
export async function benchLibvirt(options: LibvirtBenchOptions = {}): Promise<LibvirtBenchResult> {
  const count = options.count ?? 500;
  const sample = Math.min(options.virshSample ?? count, count);
  const daemon = options.daemon ?? (await startLibvirtd());
  try {
    // The test driver keeps its state only while a connection is open: this one holds it for virsh too.
    const conn = await connect(daemon.testUri);
    try {
      const dom = await conn.lookupDomainByName('test');
      await conn.getDomainState(dom);
      const started = performance.now();
      const states = await Promise.all(Array.from({ length: count }, () => conn.getDomainState(dom)));
      const pipelinedMs = performance.now() - started;
      if (states.some((s) => s.state !== DomainState.RUNNING)) throw new Error('bench: domain "test" is not running');

      const virshStarted = performance.now();
      for (let i = 0; i < sample; i++) {
        const { stdout } = await run('virsh', ['-c', daemon.testUri, 'domstate', 'test']);
        if (stdout.trim() !== 'running') throw new Error(`bench: virsh domstate said ${JSON.stringify(stdout)}`);
      }
      const virshMs = ((performance.now() - virshStarted) / sample) * count;
      return { count, pipelinedMs, virshMs, virshSampled: sample, ratio: virshMs / pipelinedMs };
    } finally {
      await conn.close();
    }
  } finally {
    if (!options.daemon) await daemon.stop();
  }
}
