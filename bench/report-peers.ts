/** The bench's rows for the gateway against its peers: throughput, CPU, tunnels' RSS, set-up rate, tunnel bytes/s, and the SOCKS5 A/B. */
import { PEERS, type PeerFigures, type PeerResults } from './peer-bench.js';
import { fmt, yes } from './stats.js';

const MEASURE = 'gateway vs proxy-chain and Squid (round-robin over the same 4 tinyproxy upstreams, ab, 32 clients)';

/** The better of the two peers by `pick` (higher is better unless `lower`). */
function better(r: PeerResults, pick: (f: PeerFigures) => number, lower = false): { name: string; value: number } {
  const peers = PEERS.filter((p) => p !== 'gateway').map((name) => ({ name, value: pick(r.peers[name]) }));
  return peers.reduce((a, b) => ((lower ? b.value < a.value : b.value > a.value) ? b : a));
}

/** Every peer's value, for the result column. */
const all = (r: PeerResults, pick: (f: PeerFigures) => number, unit: string, digits = 0) =>
  PEERS.map((p) => `${p} ${fmt(pick(r.peers[p]), digits)}${unit}`).join(', ');

/** Rows with met/NO; "not run" rows when the section did not run. */
export function peerRows(r: PeerResults | undefined): string[][] {
  if (!r) return [[`${MEASURE}: successful req/s`, '≥ 1.15× the better peer', 'not run', '—']];
  const g = r.peers.gateway;
  const rows: string[][] = [];
  for (const mode of ['keepAlive', 'close'] as const) {
    const pick = (f: PeerFigures) => f[mode].rps;
    const best = better(r, pick);
    const failed = PEERS.map((p) => `${p} ${r.peers[p][mode].failed}`).join(', ');
    rows.push([
      `${MEASURE}, ${mode === 'keepAlive' ? 'keep-alive' : 'no keep-alive'} clients: successful req/s (median of ${r.rounds} interleaved ${r.roundSeconds} s rounds), failed requests`,
      '≥ 1.15× the better peer, no failed request',
      `${all(r, pick, '')} (${fmt(pick(g) / best.value, 2)}× ${best.name}); failed: ${failed}`,
      yes(pick(g) >= 1.15 * best.value && g[mode].failed === 0),
    ]);
  }
  const cpu = better(r, (f) => f.cpuPer1000Ms, true);
  rows.push([
    `${MEASURE}: CPU per 1,000 successful requests (all processes of each)`,
    '≤ 0.85× the better peer',
    `${all(r, (f) => f.cpuPer1000Ms, ' ms')} (${fmt(g.cpuPer1000Ms / cpu.value, 2)}× ${cpu.name})`,
    yes(g.cpuPer1000Ms <= 0.85 * cpu.value),
  ]);
  const rss = better(r, (f) => f.tunnels.rssMb, true);
  const held = PEERS.map((p) => `${p} ${r.peers[p].tunnels.held}`).join(', ');
  const asked = g.tunnels.asked;
  rows.push([
    `${MEASURE}: RSS holding ${asked.toLocaleString('en-US')} CONNECT tunnels (held: ${held})`,
    "≤ the better peer's (at 10,000 tunnels)",
    all(r, (f) => f.tunnels.rssMb, ' MB'),
    yes(g.tunnels.rssMb <= rss.value && g.tunnels.held >= asked) + (asked < 10_000 ? ` (at ${asked})` : ''),
  ]);
  const rate = better(r, (f) => f.connectRate);
  rows.push([
    `${MEASURE}: CONNECT tunnels set up per second (CONNECT, one request, close; 100 at a time)`,
    "≥ the better peer's",
    all(r, (f) => f.connectRate, '/s'),
    yes(g.connectRate >= rate.value),
  ]);
  const bytes = better(r, (f) => f.tunnelBytesPerSecond);
  rows.push([
    `${MEASURE}: bytes per second through one tunnel (a ${r.bodyMb} MB body)`,
    "≥ the better peer's",
    all(r, (f) => f.tunnelBytesPerSecond / 2 ** 20, ' MiB/s', 1),
    yes(g.tunnelBytesPerSecond >= bytes.value),
  ]);
  rows.push([
    `gateway SOCKS5 tunnels ÷ HTTP CONNECT tunnels per second (A/B: median ratio of ${r.socksAb.rounds} alternating 0.5 s rounds)`,
    '≥ 95 %',
    `${fmt(r.socksAb.ratio * 100, 1)} %`,
    yes(r.socksAb.ratio >= 0.95),
  ]);
  return rows;
}
