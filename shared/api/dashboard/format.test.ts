/** Unit tests of the dashboard's pure helpers: ages, phase counts, the apply form's documents. */
import { describe, expect, it } from 'vitest';
import { age, countByPhase, duration, latency, parseFormDocuments, poolSize, sampleDocument } from './format.js';

describe('dashboard format', () => {
  it('spells ages and latencies briefly', () => {
    const now = Date.parse('2026-01-02T03:04:05Z');
    expect(age('2026-01-02T03:03:50Z', now)).toBe('15s');
    expect(age(null, now)).toBe('');
    expect(duration(125)).toBe('2m');
    expect(duration(3 * 3600 + 5 * 60)).toBe('3h 5m');
    expect(duration(2 * 86400 + 4 * 3600)).toBe('2d 4h');
    expect(duration(86400)).toBe('1d');
    expect(latency(12.4)).toBe('12 ms');
    expect(latency(undefined)).toBe('—');
  });

  it('counts every phase, zero included', () => {
    const counts = countByPhase(['Ready', 'Ready', 'Pending', 'Odd']);
    expect(counts.get('Ready')).toBe(2);
    expect(counts.get('Failed')).toBe(0);
    expect(counts.get('Odd')).toBe(1);
  });

  it('reads the sample, several YAML documents and JSON', () => {
    expect(parseFormDocuments(sampleDocument('local'))).toEqual([
      {
        name: 'sample-1',
        body: {
          apiVersion: 'egress.dev/v1',
          kind: 'Proxy',
          metadata: { name: 'sample-1', labels: { team: 'demo' } },
          spec: { provider: 'local', maxAge: '24h' },
        },
      },
    ]);
    const two = parseFormDocuments('metadata: { name: a }\n---\nmetadata: { name: b }\n');
    expect(two.map((d) => d.name)).toEqual(['a', 'b']);
    expect(parseFormDocuments('[{"metadata":{"name":"j"}}]').map((d) => d.name)).toEqual(['j']);
  });

  it('names what is wrong with a document', () => {
    expect(() => parseFormDocuments('')).toThrow(/no document/);
    expect(() => parseFormDocuments('{"metadata":')).toThrow(/not valid JSON/);
    expect(() => parseFormDocuments('a: [1,\nb: 2')).toThrow(/not valid YAML/);
    expect(() => parseFormDocuments('spec: { provider: local }')).toThrow(/document 1: metadata.name is required/);
    expect(() => parseFormDocuments('- 1')).toThrow(/must be an object/);
  });

  it('shows Ready over the wanted members: the fixed replicas, or the autoscaler’s decision with its bounds and demand', () => {
    const template = { spec: { provider: 'local' } };
    const status = {
      observedGeneration: 1,
      replicas: 2,
      readyReplicas: 1,
      updatedReplicas: 2,
      entries: [],
      conditions: [],
    };
    expect(poolSize({ spec: { replicas: 6, template }, status })).toBe('1/6');
    const autoscale = { minReplicas: 0, maxReplicas: 5, target: { inFlightPerMember: 2 } };
    const demand = { inFlight: 5, startedPerSecond: 2, waiting: 1, gateways: 2 };
    expect(poolSize({ spec: { autoscale, template }, status: { ...status, desiredReplicas: 3, demand } })).toBe(
      '1/3 (autoscale 0–5; 5 in flight, 1 waiting)',
    );
    // Not reconciled yet: the minimum.
    expect(poolSize({ spec: { autoscale, template }, status: { ...status, readyReplicas: 0 } })).toBe(
      '0/0 (autoscale 0–5)',
    );
  });
});
