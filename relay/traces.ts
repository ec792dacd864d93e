/** Which trace each settling instance belongs to, so reports and probes continue the trace of its command. */
import type { Link } from '@opentelemetry/api';
import type { RelayReport } from '../shared/wire/protocol.js';
import { linkTo } from '../shared/telemetry/propagation.js';

interface Entry {
  traceparent: string;
  /** When the command finished (in {@link TraceBook.mark} order): only a report built after can settle it. */
  finished?: number;
  until: number;
}

/**
 * The `traceparent` of the last command applied to each instance, kept while the instance settles:
 * until a published report shows it Running and probed ok (the report whose kick brings its proxy
 * to Ready), shows it gone, or `ttlMs` passes. In memory only: after a relay restart, reports
 * simply start new traces.
 */
export class TraceBook {
  private readonly entries = new Map<string, Entry>();
  private serial = 0;

  constructor(
    private readonly ttlMs = 10 * 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Remembers the trace of a command about to be applied to `instance` (replacing an older one). */
  remember(instance: string, traceparent: string | undefined): void {
    if (!traceparent) return;
    this.entries.set(instance, { traceparent, until: this.now() + this.ttlMs });
  }

  /** The command on `instance` has finished: from the next report on, the report may settle it. */
  finished(instance: string): void {
    const entry = this.entries.get(instance);
    if (entry) entry.finished = ++this.serial;
  }

  /** The trace `instance` is settling in, if any. */
  get(instance: string): string | undefined {
    const entry = this.entries.get(instance);
    return entry && entry.until > this.now() ? entry.traceparent : undefined;
  }

  /** A mark to pass to {@link settle} for a report built from now on. */
  mark(): number {
    return this.serial;
  }

  /** The live traces, by instance name, for a report body (`RelayReport.traces`). */
  live(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [name, entry] of this.entries) if (entry.until > this.now()) out[name] = entry.traceparent;
    return out;
  }

  /**
   * The report's parent and links: the trace of its first result that has one is the parent (so
   * the relay-report function continues it); the other results' traces become links.
   */
  parentOf(report: Pick<RelayReport, 'results'>): { parent?: string; links: Link[] } {
    const traces = [...new Set(report.results.flatMap((r) => this.get(r.name) ?? []))];
    const links = traces.slice(1).flatMap((t) => linkTo(t) ?? []);
    return traces[0] ? { parent: traces[0], links } : { links };
  }

  /**
   * Forgets what a published report settled: instances it shows Running and probed ok, or no
   * longer lists, whose command had finished before the report was built (`mark`: while a create
   * runs, an instance may not be listed yet); and expired entries.
   */
  settle(report: Pick<RelayReport, 'instances'>, mark: number): void {
    const listed = new Map(report.instances.map((i) => [i.name, i]));
    for (const [name, entry] of this.entries) {
      const item = listed.get(name);
      const done = entry.finished !== undefined && entry.finished <= mark;
      const settled = done && (!item || (item.state === 'Running' && item.health?.ok === true));
      if (settled || entry.until <= this.now()) this.entries.delete(name);
    }
  }
}
