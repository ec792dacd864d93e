/** The operation-span/logging decorator: every provider operation gets a span and a log line for free. */
import { SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { asEgressError } from '../errors.js';
import type { Logger } from '../logger.js';
import { recordProviderOperation } from '../telemetry/metrics.js';
import type { Instance, InstanceSpec, Provider, ProviderHealth } from './contract.js';

/** Looked up per call: a tracer taken at module load stays a no-op if the SDK (or a test recorder) registers later. */
const tracer = () => trace.getTracer('egress/providers');

/** Outcome attribute values: `ok`, or the error code (`NotFound`, `QuotaExceeded`, …). */
async function operation<T>(
  provider: Provider,
  logger: Logger,
  op: string,
  target: string | undefined,
  call: () => Promise<T>,
): Promise<T> {
  return tracer().startActiveSpan(`provider.${op}`, async (span: Span) => {
    span.setAttributes({ 'provider.name': provider.name, 'provider.type': provider.type, 'provider.operation': op });
    if (target) span.setAttribute('provider.instance', target);
    const started = performance.now();
    const names = { provider: provider.name, type: provider.type, operation: op };
    try {
      const result = await call();
      span.setAttribute('provider.outcome', 'ok');
      recordProviderOperation({ ...names, outcome: 'ok' }, performance.now() - started);
      logger.debug('provider operation', {
        provider: provider.name,
        op,
        instance: target,
        outcome: 'ok',
        ms: Math.round(performance.now() - started),
      });
      return result;
    } catch (err) {
      const e = asEgressError(err);
      span.setAttribute('provider.outcome', e.code);
      recordProviderOperation({ ...names, outcome: e.code }, performance.now() - started);
      // NotFound is an answer, not a failure.
      if (e.code !== 'NotFound') span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
      logger.debug('provider operation', {
        provider: provider.name,
        op,
        instance: target,
        outcome: e.code,
        error: e.message,
        ms: Math.round(performance.now() - started),
      });
      throw e;
    } finally {
      span.end();
    }
  });
}

/** Wraps a provider so each call is traced and logged; errors come out typed. */
export function instrument(provider: Provider, logger: Logger): Provider {
  const wrapped: Provider = {
    name: provider.name,
    type: provider.type,
    probesRemotely: provider.probesRemotely,
    resolvePlacement: (p) => provider.resolvePlacement(p),
    create: (spec: InstanceSpec): Promise<Instance> =>
      operation(provider, logger, 'create', spec.name, () => provider.create(spec)),
    get: (name: string) => operation(provider, logger, 'get', name, () => provider.get(name)),
    delete: (name: string) => operation(provider, logger, 'delete', name, () => provider.delete(name)),
    list: () => operation(provider, logger, 'list', undefined, () => provider.list()),
  };
  const expectedCountry = provider.expectedCountry?.bind(provider);
  if (expectedCountry) wrapped.expectedCountry = expectedCountry;
  const check = provider.check?.bind(provider);
  if (check) wrapped.check = (): Promise<ProviderHealth> => operation(provider, logger, 'check', undefined, check);
  const listSince = provider.listSince?.bind(provider);
  if (listSince)
    wrapped.listSince = (cursor) => operation(provider, logger, 'listSince', undefined, () => listSince(cursor));
  const changes = provider.changes?.bind(provider);
  if (changes) wrapped.changes = () => operation(provider, logger, 'changes', undefined, changes);
  return wrapped;
}
