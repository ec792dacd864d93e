/**
 * The short seeded chaos run (test/chaos/run.ts; the long one is `npm run chaos`): 40 proxies
 * churned for 60 s on the live local stack while the relay, the functions and proxy processes are
 * SIGKILLed and the emulators' connections cut, with traffic through the gateway throughout.
 */
import { describe, expect, it } from 'vitest';
import { runChaos } from '../chaos/run.js';

const SEED = Number(process.env['CHAOS_SEED'] ?? 20261202);

describe('e2e: chaos on the live local stack', () => {
  it('after SIGKILLs and cut connections the fleet settles to what was last asked, nothing leaked', async () => {
    const lines: string[] = [];
    const report = await runChaos({
      seed: SEED,
      proxies: 40,
      churnSeconds: 60,
      settleSeconds: 150,
      portOffset: 1000,
      log: (line) => lines.push(line),
    });
    console.log(lines.join('\n'));
    console.log(JSON.stringify({ settle: report.settle, hottestDocuments: report.hottestDocuments }, null, 2));
    const replay = `replay: CHAOS_SEED=${SEED} npx vitest run test/e2e/chaos.test.ts`;
    expect(report.problems, `${replay}\n${lines.join('\n')}`).toEqual([]);
    expect(
      report.faults.relay + report.faults.function + report.faults.proxy + report.faults.emulators,
    ).toBeGreaterThan(5);
    expect(report.requests).toBeGreaterThan(100);
  }, 420_000);
});
