/** The relay's report loop body: one signed report of heartbeat, health, inventory and the results not yet sent. */
import { randomUUID } from 'node:crypto';
import { ROOT_CONTEXT } from '@opentelemetry/api';
import type { Bus } from '../shared/bus/pubsub.js';
import type { Logger } from '../shared/logger.js';
import type { CommandResult } from '../shared/wire/protocol.js';
import { signer, type SigningKey } from '../shared/wire/signature.js';
import { contextFromAttributes } from '../shared/telemetry/propagation.js';
import { inSpan } from '../shared/telemetry/spans.js';
import type { RelayBackend } from './backends/backend.js';
import type { RelayConfig } from './config.js';
import type { CommandLedger } from './ledger.js';
import { coalesce } from './loops.js';
import type { HealthBook } from './probes.js';
import { buildReport } from './report.js';
import type { TraceBook } from './traces.js';

export interface ReporterDeps {
  config: Pick<RelayConfig, 'relay' | 'reportsTopic'>;
  bus: Bus;
  backends: ReadonlyMap<string, RelayBackend>;
  health: HealthBook;
  traces: TraceBook;
  /** The first signs every report. */
  keys?: readonly SigningKey[] | undefined;
  logger: Logger;
  now: () => number;
}

/** One boot of the relay: what every report of it carries. */
interface Boot {
  bootId: string;
  startedAt: number;
  ledger: CommandLedger;
}

export interface Reporter {
  /** Starts a boot (a new `bootId`) at `startedAt`: reports list the inventory of `ledger` from now on. */
  begin(ledger: CommandLedger, startedAt: number): string;
  /** Ends the boot: reporting fails until the next `begin`. */
  end(): void;
  /** Queues a command result for the next report. */
  record(result: CommandResult): void;
  /** Publishes a report now (coalesced with one already under way). */
  reportNow: () => Promise<void>;
}

/**
 * Reports start at least this far apart. A report after each applied command makes a created proxy
 * Ready without waiting for the report loop, but in a ramp of hundreds of creates that was several
 * reports a second, each carrying the whole inventory and each handled by `relay-report` (which
 * writes the relay's document); coalesced a second apart, a burst of results goes out in one.
 */
export const REPORT_MIN_GAP_MS = 1000;

export function createReporter(deps: ReporterDeps): Reporter {
  // `publish` and the four methods share one state (boot, seq, results), held in this closure.
  const { config, traces, logger, now } = deps;
  const results: CommandResult[] = [];
  let boot: Boot | undefined;
  // Counts across boots of this agent; with `bootId` it orders reports and drops stale ones.
  let seq = 0;

  const publish = async (): Promise<void> => {
    const current = boot;
    if (!current) throw new Error('the relay agent is not started');
    const batch = results.slice();
    // A report carrying results continues the trace of the (first) command it reports on.
    const { parent, links } = traces.parentOf({ results: batch });
    const mark = traces.mark();
    const options = {
      parent: parent ? contextFromAttributes({ traceparent: parent }) : ROOT_CONTEXT,
      links,
      attributes: { 'relay.id': config.relay, 'relay.report.results': batch.length },
    };
    await inSpan('relay.report', options, async (span) => {
      const report = await buildReport({
        relay: config.relay,
        bootId: current.bootId,
        seq: seq++,
        startedAt: current.startedAt,
        sentAt: now(),
        backends: deps.backends,
        health: deps.health,
        ledger: current.ledger,
        results: batch,
        traces: traces.live(),
      });
      span.setAttributes({ 'relay.report.seq': report.seq, 'relay.report.instances': report.instances.length });
      const signing = deps.keys?.[0];
      await deps.bus.publish(
        config.reportsTopic,
        report,
        { relay: config.relay },
        signing && signer(signing, 'report'),
      );
      // Only what this report carried is cleared; results recorded meanwhile wait for the next one.
      results.splice(0, report.results.length);
      traces.settle(report, mark);
      logger.debug('report published', {
        seq: report.seq,
        instances: report.instances.length,
        results: report.results.length,
      });
    });
  };

  return {
    begin(ledger, startedAt) {
      boot = { bootId: randomUUID(), startedAt, ledger };
      return boot.bootId;
    },
    end() {
      boot = undefined;
    },
    record(result) {
      results.push(result);
    },
    reportNow: coalesce(publish, REPORT_MIN_GAP_MS),
  };
}
