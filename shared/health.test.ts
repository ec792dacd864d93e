import { describe, expect, it } from 'vitest';
import { FLEET_GAUGE_INTERVAL_MS, FleetGauge } from './health.js';
import { createLogger } from './logger.js';
import { ManualClock } from './store/clock.js';
import { MemoryProxyRepository } from './store/memory/proxies.js';

/** A store whose `countByPhase` is counted, and fails while `failing` is set. */
function countedStore(clock: ManualClock) {
  const proxies = new MemoryProxyRepository(clock);
  const calls = { counts: 0, failing: false };
  const countByPhase = proxies.countByPhase.bind(proxies);
  proxies.countByPhase = () => {
    calls.counts++;
    return calls.failing ? Promise.reject(new Error('deadline exceeded')) : countByPhase();
  };
  return { proxies, calls };
}

describe('FleetGauge', () => {
  it('counts on its first tick, then at most once per interval', async () => {
    const clock = new ManualClock();
    const { proxies, calls } = countedStore(clock);
    const gauge = new FleetGauge(clock);
    const logger = createLogger({ write: () => undefined });
    expect(await gauge.record({ proxies, logger })).toBe(true);
    clock.advance(60_000);
    expect(await gauge.record({ proxies, logger })).toBe(false);
    clock.advance(FLEET_GAUGE_INTERVAL_MS - 60_001);
    expect(await gauge.record({ proxies, logger })).toBe(false);
    clock.advance(1);
    expect(await gauge.record({ proxies, logger })).toBe(true);
    expect(calls.counts).toBe(2);
  });

  it('logs a failed count, does not throw, and counts again on the next tick', async () => {
    const clock = new ManualClock();
    const { proxies, calls } = countedStore(clock);
    const gauge = new FleetGauge(clock);
    const lines: string[] = [];
    const logger = createLogger({ write: (line) => void lines.push(line) });
    calls.failing = true;
    expect(await gauge.record({ proxies, logger })).toBe(false);
    expect(lines.join('\n')).toContain('counting proxies by phase failed');
    calls.failing = false;
    clock.advance(60_000);
    expect(await gauge.record({ proxies, logger })).toBe(true);
    expect(calls.counts).toBe(2);
  });
});
