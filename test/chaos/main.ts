/**
 * `npm run chaos [-- --seed N --proxies 500 --minutes 3 --settle-minutes 8]`: the chaos run on the
 * live local stack (test/chaos/run.ts). The defaults are a run measured to pass on the 2-core
 * machine (settled in 351 s: docs/guarantees.md, "Chaos on the live stack"). Prints the report;
 * exits 1, with the replay command, when anything is wrong at the end.
 */
import { parseArgs } from 'node:util';
import { runChaos } from './run.js';

const { values } = parseArgs({
  options: {
    seed: { type: 'string' },
    proxies: { type: 'string', default: '500' },
    minutes: { type: 'string', default: '3' },
    'settle-minutes': { type: 'string', default: '8' },
    'port-offset': { type: 'string', default: '1100' },
  },
});

function positive(name: string, text: string): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, not "${text}"`);
  return n;
}

const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : positive('seed', values.seed);
const proxies = positive('proxies', values.proxies);
const minutes = positive('minutes', values.minutes);
const settleMinutes = positive('settle-minutes', values['settle-minutes']);
const report = await runChaos({
  seed,
  proxies,
  churnSeconds: minutes * 60,
  settleSeconds: settleMinutes * 60,
  portOffset: positive('port-offset', values['port-offset']),
  log: (line) => console.log(`[chaos] ${line}`),
});
console.log(JSON.stringify({ ...report, failedOtherwise: report.failedOtherwise.length }, null, 2));
if (report.problems.length > 0) {
  console.log(`\nFAILED (${report.problems.length} problems):\n  ${report.problems.slice(0, 50).join('\n  ')}`);
  console.log(
    `replay: npm run chaos -- --seed ${seed} --proxies ${proxies} --minutes ${minutes} --settle-minutes ${settleMinutes}`,
  );
  process.exit(1);
}
console.log(
  `passed: ${report.requests} requests through the gateway, ${report.failedAtProxyDeath} failed at a proxy's own death, settled in ${(report.settledMs / 1000).toFixed(1)} s`,
);
