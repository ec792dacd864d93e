/** Handling messages on `relay-reports`: store heartbeat and inventory, check (or kick checks of) what changed. */
import type { Bus } from './bus/pubsub.js';
import type { BusMessage } from './bus/message.js';
import type { Config } from './config/schema.js';
import { toValidationError } from './domain/proxy.js';
import type { Logger } from './logger.js';
import { checkNowOrKick, type CheckNow } from './reconcile/check.js';
import { kickChecks } from './reconcile/kick.js';
import { relayReportSchema, type RelayReport } from './wire/protocol.js';
import { MISSING_KEYS_REASON, RELAY_KEYS_ENV, verifySignature, type RelayKeyring } from './wire/signature.js';
import { inTraceOf } from './telemetry/spans.js';
import type { RelayRepository } from './store/ports.js';

export interface RelayReportDeps {
  /** The configured providers name the relays that may report. */
  config: Pick<Config, 'providers'>;
  relays: RelayRepository;
  /** Every report must be signed with a key of the relay it names (shared/wire/signature.ts). */
  relayKeys?: RelayKeyring | undefined;
  /** Without `relayKeys`, reports are refused unless this says unsigned ones are accepted (development only). */
  allowUnsignedRelays?: boolean;
  bus: Bus;
  logger: Logger;
  now?: () => number;
  /**
   * Checks a few changed proxies in this invocation (the `relay-report` function: a just-created
   * proxy turns Ready without a hop through `check`); without it, or for more, they are kicked.
   */
  check?: CheckNow;
}

/** At most this many changed proxies of one report are checked in its invocation; the rest are kicked, so `check` invocations share them. */
export const CHECKED_IN_REPORT = 10;

/**
 * Applies one relay report. A malformed report is logged with its field and acknowledged (never
 * retried in a loop). A report may only speak for the relay that sent it: its `relay` attribute
 * (set by the relay's publisher) must be present and name the relay in its body, and that relay
 * must run a configured provider, and it must be signed by one of that relay's keys (without keys,
 * every report is refused unless `allowUnsignedRelays`: fail closed).
 * Anything else is rejected (logged with the field and the reason) and changes nothing.
 */
export async function handleRelayReport(deps: RelayReportDeps, message: BusMessage): Promise<string> {
  const rejected = (field: string, reason: string) => {
    deps.logger.warn('relay report rejected', { messageId: message.id, field, reason });
    return 'rejected';
  };
  if (message.decodeError) return rejected(message.decodeField ?? '(message)', message.decodeError);
  const parsed = relayReportSchema.safeParse(message.json);
  if (!parsed.success) {
    const error = toValidationError(parsed.error);
    return rejected(error.field, error.message);
  }
  const report = parsed.data;
  const sender = message.attributes['relay'];
  if (sender === undefined) return rejected('attributes.relay', 'missing: a report must say which relay sent it');
  if (sender !== report.relay)
    return rejected('relay', `attribute relay=${JSON.stringify(sender)} does not match body relay="${report.relay}"`);
  if (!deps.config.providers.some((p) => p.relay === report.relay))
    return rejected('relay', `no configured provider is run by relay "${report.relay}"`);
  if (!deps.relayKeys && !deps.allowUnsignedRelays) return rejected(RELAY_KEYS_ENV, MISSING_KEYS_REASON);
  if (deps.relayKeys) {
    const keys = deps.relayKeys.get(report.relay);
    if (!keys) return rejected('relay', `${RELAY_KEYS_ENV} holds no key for relay "${report.relay}"`);
    const refused = verifySignature(keys, 'report', message.attributes, message.text);
    if (refused) return rejected(refused.field, refused.reason);
  }
  const outcome = await deps.relays.applyReport(report, (deps.now ?? Date.now)());
  if (outcome.changedProxies.length > 0) await checkInTraces(deps, outcome.changedProxies, report);
  return outcome.stale ? 'stale' : 'applied';
}

/**
 * Checks (a few, see {@link CHECKED_IN_REPORT}) or kicks checks of the changed proxies, each in the
 * trace of the command settling its instance (`report.traces`), so an apply stays one trace until
 * Ready; the others in this invocation's.
 */
async function checkInTraces(deps: RelayReportDeps, proxies: string[], report: RelayReport): Promise<void> {
  const traceOfProxy = new Map<string, string>();
  for (const item of report.instances) {
    const traceparent = report.traces?.[item.name];
    if (traceparent) traceOfProxy.set(item.proxy, traceparent);
  }
  const groups = new Map<string | undefined, string[]>();
  for (const proxy of proxies) {
    const key = traceOfProxy.get(proxy);
    groups.set(key, [...(groups.get(key) ?? []), proxy]);
  }
  let budget = CHECKED_IN_REPORT;
  for (const [traceparent, names] of groups) {
    const here = names.length <= budget;
    if (here) budget -= names.length;
    await inTraceOf(traceparent, 'kick checks', () =>
      here ? checkNowOrKick(deps, names) : kickChecks(deps.bus, names),
    );
  }
}
