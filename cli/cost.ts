/** `egress cost`: the monthly estimate of a providers config and a fleet, printed as a bill. */
import { resolve } from 'node:path';
import { readConfigFile } from '../shared/config/config-file.js';
import { parseConfig } from '../shared/config/load.js';
import type { Config } from '../shared/config/schema.js';
import { CATALOGUE } from '../shared/cost/catalogue.js';
import { estimate, type Estimate, type FleetItem } from '../shared/cost/estimate.js';
import { spreadOf } from '../shared/domain/pool.js';
import { ValidationError } from '../shared/errors.js';
import { footprintOf } from '../shared/providers/footprint.js';
import type { Command } from './command.js';
import { loadDocuments, type FileIo, type Io } from './commands.js';

type CostCommand = Extract<Command, { verb: 'cost' }>;

/** `count` proxies of the provider named `provider`, at `placement`. */
interface Request {
  provider: string;
  placement: Record<string, unknown>;
  count: number;
  /** Where the request came from, in errors. */
  from: string;
}

/** The proxies of the fleet files: one per Proxy, `replicas` per pool, shared evenly over its spread. */
function requestsOf(io: FileIo, files: readonly string[]): Request[] {
  const out: Request[] = [];
  for (const doc of loadDocuments(io, files)) {
    const from = `${doc.kind}/${doc.metadata.name}`;
    if (doc.kind !== 'ProxyPool') {
      out.push({ provider: doc.spec.provider, placement: doc.spec.placement, count: 1, from });
      continue;
    }
    const entries = spreadOf(doc.spec);
    // An autoscaled pool is estimated at its maximum: what it may cost at the busiest.
    const replicas = doc.spec.replicas ?? doc.spec.autoscale?.maxReplicas ?? 0;
    entries.forEach((entry, i) => {
      const count = Math.floor(replicas / entries.length) + (i < replicas % entries.length ? 1 : 0);
      if (count > 0) out.push({ provider: entry.provider, placement: entry.placement, count, from });
    });
  }
  return out;
}

function fleetOf(config: Config, requests: readonly Request[]): FleetItem[] {
  return requests.map((r) => {
    const index = config.providers.findIndex((p) => p.name === r.provider);
    const provider = config.providers[index];
    if (!provider)
      throw new ValidationError(
        `${r.from}: spec.provider`,
        `provider "${r.provider}" is not in the config (configured: ${config.providers.map((p) => p.name).join(', ') || 'none'})`,
      );
    try {
      return { footprint: footprintOf(provider, r.placement, `config.providers.${index}`), count: r.count };
    } catch (err) {
      if (err instanceof ValidationError && err.field.startsWith('spec.'))
        throw new ValidationError(`${r.from}: ${err.field}`, err.reason, { cause: err });
      throw err;
    }
  });
}

/**
 * The config of `--config` and the footprints of the fleet: the files' proxies, or `--proxies N` on
 * one provider (`--provider`, else the config's first).
 *
 * @throws ValidationError naming the file, document or config field that is invalid
 */
export function loadFleet(
  io: FileIo,
  flags: { config: string; files: readonly string[]; proxies?: number | undefined; provider?: string | undefined },
): { config: Config; fleet: FleetItem[] } {
  const config = parseConfig(readConfigFile(resolve(io.cwd, flags.config), '--config'));
  let requests: Request[];
  if (flags.files.length > 0) requests = requestsOf(io, flags.files);
  else {
    const name = flags.provider ?? config.providers[0]?.name;
    if (name === undefined) throw new ValidationError('--config', 'configures no provider');
    requests = [{ provider: name, placement: {}, count: flags.proxies ?? 0, from: '--proxies' }];
  }
  return { config, fleet: fleetOf(config, requests) };
}

/**
 * The estimate of `cmd`.
 *
 * @throws ValidationError naming the file, document or config field a price or value is missing for
 */
export function costEstimate(io: FileIo, cmd: CostCommand): Estimate {
  const { config, fleet } = loadFleet(io, cmd);
  return estimate({
    fleet,
    egressGib: cmd.egressGib,
    checkIntervalSeconds: config.checkIntervalSeconds,
    catalogue: CATALOGUE,
    // What `terraform apply` of this config creates besides the proxies (infra/terraform defaults).
    deployment: {
      connector: config.providers.some((p) => p.type === 'gcp' || p.type === 'kubernetes'),
      echo: true,
    },
  });
}

/** The estimate as a table, the total, then the notes. */
export function formatEstimate(result: Estimate): string {
  const rows = [
    ['ITEM', 'QUANTITY', 'MONTHLY (USD)'],
    ...result.lines.map((l) => [l.what, l.quantity, l.monthlyUsd.toFixed(2)]),
  ];
  const widths = [0, 1].map((c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  const line = (r: string[]) =>
    `${(r[0] ?? '').padEnd(widths[0] ?? 0)}  ${(r[1] ?? '').padEnd(widths[1] ?? 0)}  ${r[2] ?? ''}`.trimEnd();
  const total = `total: $${result.totalUsd.toFixed(2)} a month`;
  return `${rows.map(line).join('\n')}\n\n${total}\n${result.notes.map((n) => `- ${n}`).join('\n')}\n`;
}

/** `egress cost`: prints the estimate. */
export function runCost(io: Io, cmd: CostCommand): void {
  io.stdout.write(formatEstimate(costEstimate(io, cmd)));
}
