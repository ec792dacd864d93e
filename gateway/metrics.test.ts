/** The gateway's counters: bounded domain series, sessions summed per pool, totals read back from the instruments. */
import { DataPointType } from '@opentelemetry/sdk-metrics';
import { describe, expect, it } from 'vitest';
import { GATEWAY_METRIC_NAMES, GatewayMetrics, MAX_SERIES, OTHER_DOMAINS } from './metrics.js';

/** Every data point of one instrument, as attributes and value. */
async function points(metrics: GatewayMetrics, name: string) {
  const all = (await metrics.collect()).scopeMetrics.flatMap((s) => s.metrics);
  const metric = all.find((m) => m.descriptor.name === name);
  if (!metric || metric.dataPointType !== DataPointType.SUM) return [];
  return metric.dataPoints.map((p) => ({ attributes: p.attributes, value: p.value }));
}

describe('gateway metrics', () => {
  it('gives the first maxDomains domains a series each and sums the rest under (other)', async () => {
    const metrics = new GatewayMetrics(2);
    const usage = metrics.recorder('crawl');
    for (const domain of ['a.example', 'b.example', 'c.example', 'a.example', 'd.example'])
      usage.attempt({ proxy: 'p1', domain, session: undefined }, 'ok', 0.01);
    const byDomain = Object.fromEntries(
      (await points(metrics, GATEWAY_METRIC_NAMES.domainAttempts)).map((p) => [
        String(p.attributes['target.domain']),
        p.value,
      ]),
    );
    expect(byDomain).toEqual({ 'a.example': 2, 'b.example': 1, [OTHER_DOMAINS]: 2 });
  });

  it('sums session traffic per pool, with no attribute naming a session', async () => {
    const metrics = new GatewayMetrics();
    const crawl = metrics.recorder('crawl');
    const any = metrics.recorder(undefined);
    for (const session of ['s1', 's2', 's3']) crawl.attempt({ proxy: 'p1', domain: 'x', session }, 'ok', 0.01);
    crawl.attempt({ proxy: 'p1', domain: 'x', session: undefined }, 'ok', 0.01);
    any.bytes({ proxy: 'p2', domain: 'x', session: 's4' }, 100, 7);
    const sessions = await points(metrics, GATEWAY_METRIC_NAMES.sessionAttempts);
    expect(sessions).toEqual([{ attributes: { 'pool.name': 'crawl', 'gateway.outcome': 'ok' }, value: 3 }]);
    const io = await points(metrics, GATEWAY_METRIC_NAMES.sessionIo);
    expect(io.map((p) => [p.attributes['pool.name'], p.attributes['network.io.direction'], p.value])).toEqual([
      ['*', 'receive', 100],
      ['*', 'transmit', 7],
    ]);
    const keys = (await metrics.collect()).scopeMetrics.flatMap((s) =>
      s.metrics.flatMap((m) => (m.dataPoints as { attributes: object }[]).flatMap((p) => Object.keys(p.attributes))),
    );
    expect(keys.filter((k) => k.includes('session'))).toEqual([]);
  });

  it('keeps the sessions of two pools apart, and every figure adds up across collections', async () => {
    const metrics = new GatewayMetrics();
    const crawl = metrics.recorder('crawl');
    const shop = metrics.recorder('shop');
    crawl.attempt({ proxy: 'p1', domain: 'x', session: 's1' }, 'ok', 0.01);
    shop.attempt({ proxy: 'p1', domain: 'x', session: 's2' }, 'ok', 0.01);
    shop.attempt({ proxy: 'p1', domain: 'x', session: 's2' }, 'failed', 1);
    const sessions = async () =>
      (await points(metrics, GATEWAY_METRIC_NAMES.sessionAttempts)).map((p) => [
        p.attributes['pool.name'],
        p.attributes['gateway.outcome'],
        p.value,
      ]);
    expect(await sessions()).toEqual([
      ['crawl', 'ok', 1],
      ['shop', 'ok', 1],
      ['shop', 'failed', 1],
    ]);
    // Cumulative: a second collection after more traffic reports the running totals.
    shop.attempt({ proxy: 'p1', domain: 'x', session: 's3' }, 'ok', 0.01);
    shop.bytes({ proxy: 'p1', domain: 'x', session: 's3' }, 10, 1);
    shop.bytes({ proxy: 'p1', domain: 'x', session: 's3' }, 5, 2);
    expect(await sessions()).toEqual([
      ['crawl', 'ok', 1],
      ['shop', 'ok', 2],
      ['shop', 'failed', 1],
    ]);
    const io = await points(metrics, GATEWAY_METRIC_NAMES.proxyIo);
    expect(io.map((p) => [p.attributes['network.io.direction'], p.value])).toEqual([
      ['receive', 15],
      ['transmit', 3],
    ]);
    crawl.failure();
    crawl.failure();
    expect(await points(metrics, GATEWAY_METRIC_NAMES.failures)).toEqual([{ attributes: {}, value: 2 }]);
  });

  it('past MAX_SERIES proxies, later ones add up under one overflow series, right at every collection', async () => {
    const metrics = new GatewayMetrics();
    const usage = metrics.recorder(undefined);
    const extra = 10;
    const round = () => {
      for (let i = 0; i < MAX_SERIES + extra; i++)
        usage.attempt({ proxy: `p${i}`, domain: 'x', session: undefined }, 'ok', 0);
    };
    for (let collection = 1; collection <= 3; collection++) {
      round();
      const all = await points(metrics, GATEWAY_METRIC_NAMES.proxyAttempts);
      expect(all).toHaveLength(MAX_SERIES + 1);
      expect(all.find((p) => p.attributes['otel.metric.overflow'] === true)?.value).toBe(extra * collection);
      expect(all.find((p) => p.attributes['proxy.name'] === 'p0')?.value).toBe(collection);
    }
  });

  it('reads totals per proxy back (the exit summary)', async () => {
    const metrics = new GatewayMetrics();
    const usage = metrics.recorder(undefined);
    const use = { proxy: 'p1', domain: 'x', session: undefined };
    usage.attempt(use, 'ok', 0.02);
    usage.attempt(use, 'ok', 0.04);
    usage.attempt(use, 'banned', 0.5);
    usage.attempt(use, 'failed', 5);
    usage.bytes(use, 1000, 20);
    expect((await metrics.totals()).get('p1')).toEqual({
      ok: 2,
      banned: 1,
      failed: 1,
      received: 1000,
      sent: 20,
      meanSeconds: expect.closeTo(0.03, 6) as number,
    });
    expect(await metrics.summary()).toEqual([
      'p1: 2 answered, 1 banned, 1 failed, 1000 bytes in, 20 bytes out, mean 30.0 ms',
    ]);
  });
});
