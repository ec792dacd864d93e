/** `shared/bus/topics.ts#TOPICS`, the names the code publishes to, against the topics infra/topology.yaml declares. */
import { describe, expect, it } from 'vitest';
import { TOPICS } from '../../shared/bus/topics.js';
import { LOCAL_RELAY_CONFIG } from '../../relay/config.js';
import { loadTopology } from './topology.js';

const topology = loadTopology();

/** The function each push subscription delivers to, and the topic it must take from `TOPICS`. */
const PUSHED: Record<string, string> = {
  requests: TOPICS.proxyRequests,
  check: TOPICS.proxyChecks,
  gc: TOPICS.gcTicks,
  'relay-report': TOPICS.relayReports,
  health: TOPICS.healthTicks,
};

describe('topic names: shared/bus/topics.ts against infra/topology.yaml', () => {
  it('declares exactly the topics of TOPICS', () => {
    expect([...topology.topics].sort()).toEqual(Object.values(TOPICS).sort());
  });

  it('pushes each function the topic the code publishes its messages on', () => {
    const pushed = Object.fromEntries(topology.subscriptions.flatMap((s) => (s.push ? [[s.push, s.topic]] : [])));
    expect(pushed).toEqual(PUSHED);
  });

  it('sends relay commands, dead letters and the local relay reports to the TOPICS names', () => {
    expect(topology.relaySubscription.topic).toBe(TOPICS.relayCommands);
    const deadLetters = [topology.relaySubscription, ...topology.subscriptions].flatMap((s) =>
      s.deadLetter ? [s.deadLetter.topic] : [],
    );
    expect(new Set(deadLetters)).toEqual(new Set([TOPICS.deadLetters]));
    expect(LOCAL_RELAY_CONFIG.reportsTopic).toBe(TOPICS.relayReports);
  });

  it('schedules ticks only on TOPICS topics', () => {
    const topics: string[] = Object.values(TOPICS);
    for (const s of topology.schedules) expect(topics, s.name).toContain(s.topic);
  });
});
