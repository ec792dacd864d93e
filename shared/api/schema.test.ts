/** The API's own views parse under the shared answer schemas the CLI reads them with (shared/api/schema.ts). */
import { describe, expect, it } from 'vitest';
import { proxyDocSchema, type ProxyDoc } from '../domain/status.js';
import { proxyView } from './handler.js';
import { proxyListSchema, proxySchema, proxyWithEventsSchema } from './schema.js';

const AT = '2026-12-02T05:00:00.000Z';

/** A stored proxy, Ready and probed, and one just accepted. */
const docs: ProxyDoc[] = [
  proxyDocSchema.parse({
    apiVersion: 'egress.dev/v1',
    kind: 'Proxy',
    metadata: { name: 'eu-1', labels: { team: 'a' } },
    spec: { provider: 'local', placement: { catalogue: 'loopback' }, port: 0, maxAge: '24h' },
    generation: 2,
    requestTime: 1,
    createdAt: AT,
    deletionRequestedAt: AT,
    lease: { holder: 'h', until: 5, generation: 2 },
    status: {
      phase: 'Ready',
      observedGeneration: 2,
      address: '127.0.0.1:24000',
      instance: { name: 'ep-eu-1', ip: '127.0.0.1', port: 24000, state: 'Running', createdAt: AT, specHash: 'x' },
      conditions: [{ type: 'Ready', status: 'True', reason: 'Ready', message: 'ok', lastTransitionTime: AT }],
      health: { lastProbeAt: AT, ok: true, latencyMs: 3, egressIp: '127.0.0.1', consecutiveFailures: 0 },
    },
  }),
  proxyDocSchema.parse({
    apiVersion: 'egress.dev/v1',
    kind: 'Proxy',
    metadata: { name: 'eu-2', labels: {} },
    spec: { provider: 'local' },
    generation: 1,
    requestTime: 1,
    createdAt: AT,
    status: { phase: 'Pending', observedGeneration: 0, conditions: [] },
  }),
];

describe('shared/api/schema.ts against the handler views', () => {
  it.each(docs.map((d) => [d.metadata.name, d] as const))('%s: proxyView parses as a Proxy, nothing lost', (_, doc) => {
    const view = proxyView(doc);
    expect(proxySchema.parse(view)).toEqual(view);
    expect(view).not.toHaveProperty('lease');
  });

  it('a list and a detail parse as the list and detail answers', () => {
    const items = docs.map(proxyView);
    expect(proxyListSchema.parse({ items }).items).toHaveLength(2);
    const event = { at: AT, type: 'Normal', reason: 'Ready', message: 'ok' };
    expect(proxyWithEventsSchema.parse({ ...items[0], events: [event] }).events).toEqual([event]);
  });
});
