/** The peer rows: met only against the better peer, a failed request makes throughput NO, and the RSS row says at how many tunnels. */
import { describe, expect, it } from 'vitest';
import type { PeerFigures, PeerResults } from './peer-bench.js';
import { peerRows } from './report-peers.js';

const figures = (rps: number, over: Partial<PeerFigures> = {}): PeerFigures => ({
  keepAlive: { rps, failed: 0 },
  close: { rps, failed: 0 },
  cpuPer1000Ms: 100,
  tunnels: { asked: 10_000, held: 10_000, rssMb: 100 },
  connectRate: 1000,
  tunnelBytesPerSecond: 1e9,
  ...over,
});
const results = (gateway: PeerFigures, squid: PeerFigures): PeerResults => ({
  rounds: 5,
  roundSeconds: 4,
  clients: 32,
  bodyMb: 100,
  peers: { gateway, 'proxy-chain': figures(100), squid },
  socksAb: { ratio: 0.97, rounds: 20 },
});
const met = (rows: string[][]) => rows.map((r) => r[3]);

describe('peer rows', () => {
  it('compares with the better peer and needs no failed request', () => {
    expect(met(peerRows(results(figures(1200), figures(1000)))).slice(0, 2)).toEqual(['yes', 'yes']);
    expect(met(peerRows(results(figures(1100), figures(1000)))).slice(0, 2)).toEqual(['NO', 'NO']);
    const failing = figures(2000, { close: { rps: 2000, failed: 1 } });
    expect(met(peerRows(results(failing, figures(1000)))).slice(0, 2)).toEqual(['yes', 'NO']);
  });

  it('holds the CPU row to 0.85× the lower peer and says the tunnel count when below 10,000', () => {
    const rows = peerRows(
      results(figures(0, { cpuPer1000Ms: 90, tunnels: { asked: 200, held: 200, rssMb: 50 } }), figures(0)),
    );
    expect(rows[2]?.[3]).toBe('NO');
    expect(rows[3]?.[3]).toBe('yes (at 200)');
    expect(peerRows(undefined)[0]?.[2]).toBe('not run');
  });
});
