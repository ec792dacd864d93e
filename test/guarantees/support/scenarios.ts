/** Random request scenarios: applies, spec changes and deletes on overlapping names, and what each must converge to. */
import type { BusMessage } from '../../../shared/bus/message.js';
import { applyRequestSchema } from '../../../shared/domain/proxy.js';
import { onTheWire } from './deliveries.js';
import type { Rng } from './prng.js';
import { currentPlacement, PROVIDER, type Expected } from './subject.js';

/**
 * Spec variants. 0 and 3 hash alike (maxAge is not hashed), as do 1 and 2 (the catalogue entry
 * resolves to 1's placement): moving between the pairs replaces the instance, within a pair only
 * bumps the generation.
 */
export const variant = (i: number): Record<string, unknown> =>
  [
    { provider: PROVIDER },
    { provider: PROVIDER, placement: currentPlacement() },
    { provider: PROVIDER, placement: { catalogue: 'alt' } },
    { provider: PROVIDER, maxAge: '24h' },
  ][i] ?? {};
export const VARIANT_COUNT = 4;
export const LABELS: readonly Record<string, string>[] = [{}, { team: 'a' }, { team: 'b', tier: 'gold' }];

/** One request of a scenario, published once (its copies share the message id and publish time). */
export interface Op {
  kind: 'apply' | 'delete';
  name: string;
  variant: number;
  labels: number;
  publishTime: number;
  message: BusMessage;
}

export function requestBody(
  kind: 'apply' | 'delete',
  name: string,
  variantIndex = 0,
  labels = 0,
): Record<string, unknown> {
  if (kind === 'delete') return { apiVersion: 'egress.dev/v1', kind: 'Proxy', action: 'delete', metadata: { name } };
  return {
    apiVersion: 'egress.dev/v1',
    kind: 'Proxy',
    action: 'apply',
    metadata: { name, labels: LABELS[labels] },
    spec: variant(variantIndex),
  };
}

let lastPublishTime = 0;
/** Publish times strictly increase across the whole file: a later scenario's requests are newer. */
export function publishTimes(count: number): number {
  const base = Math.max(Date.now(), lastPublishTime + 1);
  lastPublishTime = base + count - 1;
  return base;
}

/** 1–maxOps requests on 1–names.length of `names`, 70 % applies. */
export function generateOps(rng: Rng, names: readonly string[], maxOps = 6): Op[] {
  const used = rng.shuffle(names).slice(0, rng.int(1, names.length));
  const count = rng.int(1, maxOps);
  const base = publishTimes(count);
  return Array.from({ length: count }, (_, i) => {
    const kind = rng.chance(0.7) ? 'apply' : 'delete';
    const name = rng.pick(used);
    const index = rng.int(0, VARIANT_COUNT - 1);
    const labels = rng.int(0, LABELS.length - 1);
    const publishTime = base + i;
    const message = onTheWire(requestBody(kind, name, index, labels), publishTime);
    return { kind, name, variant: index, labels, publishTime, message };
  });
}

/** What one request leaves behind once converged. */
export function expectationOf(kind: 'apply' | 'delete', name: string, variant = 0, labels = 0): Expected {
  if (kind === 'delete') return { exists: false };
  const parsed = applyRequestSchema.parse(requestBody('apply', name, variant, labels));
  return { exists: true, spec: parsed.spec, labels: parsed.metadata.labels };
}

/** Applies the ops to the expectations: per name, the request with the latest publish time wins. */
export function expectAfter(ops: readonly Op[], expected: Map<string, Expected>): void {
  const sorted = [...ops].sort((a, b) => a.publishTime - b.publishTime);
  for (const op of sorted) expected.set(op.name, expectationOf(op.kind, op.name, op.variant, op.labels));
}

export function describeOps(ops: readonly Op[]): string {
  return ops
    .map((o) => `${o.kind}(${o.name}${o.kind === 'apply' ? ` v${o.variant} l${o.labels}` : ''} @${o.publishTime})`)
    .join(', ');
}
