/** The bench's rows for the gateway that learns: first-attempt success in a banning world, and the A/B of the plain path. */
import { MARKS, WINDOW, type LearningResults } from './learning-bench.js';
import { fmt, yes } from './stats.js';

const pct = (x: number) => `${fmt(x * 100, 1)} %`;
const MEASURE = 'gateway first-attempt success, a third of 6 proxies banned by the target (403 by source address)';

/** One row per mark for round-robin (reference) and the learning gateway (target ≥ 99 % once learnt), then the A/B rows. */
export function learningRows(r: LearningResults | undefined): string[][] {
  if (!r)
    return [
      [`${MEASURE}, learning`, '≥ 99 % once learnt', 'not run', '—'],
      ['gateway plain path with learning ÷ round-robin (A/B)', '≥ 95 %', 'not run', '—'],
    ];
  const rows: string[][] = [];
  MARKS.forEach((mark, i) => {
    const at = (policy: keyof LearningResults['firstAttempt']) => r.firstAttempt[policy].atMarks[i] ?? 0;
    const window = `requests ${mark - WINDOW + 1}–${mark}`;
    rows.push([
      `${MEASURE}, round-robin, ${window}`,
      '— (reference)',
      `${pct(at('round-robin'))}; with --ban-on 403 (a 10-min exclusion on the first ban) ${pct(at('round-robin-ban-on'))}`,
      'info',
    ]);
    rows.push([`${MEASURE}, learning, ${window}`, '≥ 99 %', pct(at('learning')), yes(at('learning') >= 0.99)]);
  });
  const { roundRobinRps, learningRps, grammarRps, learningRatio, grammarRatio } = r.ab;
  const ab = (label: string, ratio: number, rps: number) => [
    `gateway plain path ${label} ÷ round-robin with a plain username (A/B: median ratio of 30 alternating 0.5 s rounds)`,
    '≥ 95 %',
    `${pct(ratio)} (medians ${fmt(rps, 0)} vs ${fmt(roundRobinRps, 0)} req/s)`,
    yes(ratio >= 0.95),
  ];
  rows.push(
    ab('with learning', learningRatio, learningRps),
    ab('with learning and a grammar username', grammarRatio, grammarRps),
  );
  return rows;
}
