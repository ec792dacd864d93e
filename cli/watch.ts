/** `egress get proxies -w`: prints the list, then every 2 s the rows that changed, until Ctrl-C. */
import { setTimeout as sleep } from 'node:timers/promises';
import { PHASES } from '../shared/domain/status.js';
import type { ApiClient, ListFilters } from './api-client.js';
import type { ApiProxy } from '../shared/api/schema.js';
import type { GetOutput } from './command.js';
import { alignRows, columnWidths, proxyHeader, proxyRow, toYaml } from './format.js';

/** What to watch and how to print it. */
export interface WatchOptions {
  output: GetOutput;
  filters: ListFilters;
  intervalMs?: number;
  /** Ctrl-C: the watch ends (without error) when this aborts. */
  signal?: AbortSignal | undefined;
  now?: () => number;
  /** Reports a failed poll (the watch goes on). */
  onError?: (message: string) => void;
}

/** What makes a row "changed": what is shown but the age and latency, which change all the time. */
function fingerprint(p: ApiProxy): string {
  const { metadata, spec, status } = p;
  return JSON.stringify([
    metadata.name,
    metadata.createdAt,
    spec.provider,
    status.phase,
    status.address,
    status.health?.egressIp,
    status.instance?.name,
  ]);
}

/** Column widths that leave room for every phase (and `Deleted`), so later rows stay aligned. */
function watchWidths(rows: string[][]): number[] {
  const widths = columnWidths(rows);
  widths[2] = Math.max(widths[2] ?? 0, ...[...PHASES, 'Deleted'].map((p) => p.length));
  return widths;
}

/**
 * Watches the proxy list. In table formats the first poll prints a header and every row, later
 * polls the rows that changed (a proxy that went away shows phase `Deleted`); in `json` each
 * change is one compact line (for `jq`), in `yaml` one document.
 *
 * @param write - where output goes (stdout)
 * @returns when `signal` aborts
 */
export async function watchProxies(client: ApiClient, write: (s: string) => void, opts: WatchOptions): Promise<void> {
  const now = opts.now ?? Date.now;
  const wide = opts.output === 'wide';
  const seen = new Map<string, { print: string; proxy: ApiProxy }>();
  let widths: number[] | undefined;
  const print = (changed: ApiProxy[]) => {
    if (changed.length === 0) return;
    if (opts.output === 'json') return write(changed.map((p) => `${JSON.stringify(p)}\n`).join(''));
    if (opts.output === 'yaml') return write(changed.map((p) => `---\n${toYaml(p)}`).join(''));
    const rows = changed.map((p) => proxyRow(p, wide, now()));
    if (!widths) {
      const all = [proxyHeader(wide), ...rows];
      widths = watchWidths(all);
      return write(`${alignRows(all, widths).join('\n')}\n`);
    }
    write(`${alignRows(rows, widths).join('\n')}\n`);
  };

  while (!opts.signal?.aborted) {
    let items: ApiProxy[] | undefined;
    try {
      items = await client.listProxies(opts.filters);
    } catch (err) {
      if (opts.signal?.aborted) return;
      opts.onError?.(err instanceof Error ? err.message : String(err));
    }
    if (items) {
      const changed: ApiProxy[] = [];
      const current = new Set<string>();
      for (const p of items) {
        current.add(p.metadata.name);
        const fp = fingerprint(p);
        if (seen.get(p.metadata.name)?.print !== fp) changed.push(p);
        seen.set(p.metadata.name, { print: fp, proxy: p });
      }
      for (const [name, { proxy }] of seen) {
        if (current.has(name)) continue;
        seen.delete(name);
        changed.push({ ...proxy, status: { ...proxy.status, phase: 'Deleted' } });
      }
      if (widths === undefined && changed.length === 0 && opts.output !== 'json' && opts.output !== 'yaml') {
        widths = watchWidths([proxyHeader(wide)]);
        write(`${alignRows([proxyHeader(wide)], widths).join('\n')}\n`);
      }
      print(changed);
    }
    try {
      await sleep(opts.intervalMs ?? 2000, undefined, { signal: opts.signal });
    } catch {
      return;
    }
  }
}
