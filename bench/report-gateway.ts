/** The bench's rows for the gateway (its targets and the reference rows against a Node proxy) and the libvirt client. */
import { CLIENTS, type GatewayResults } from './gateway-bench.js';
import { FLAT_BOUND, soakVerdict } from './soak.js';
import { fmt, ms, yes } from './stats.js';

/** The libvirt client's comparison: the same state look-ups through `virsh` and pipelined on one connection. */
export interface LibvirtRatio {
  pipelinedMs: number;
  virshMs: number;
  ratio: number;
}

export function libvirtRow(libvirt: LibvirtRatio | undefined): string[] {
  const measure = 'libvirt client, `virsh` time ÷ pipelined time';
  if (!libvirt) return [measure, '— (none set)', 'not measured (left out with --only)', '—'];
  // From the two times, so the direction is plain whichever way the module's own `ratio` goes.
  const result = `${fmt(libvirt.virshMs / libvirt.pipelinedMs, 1)}× (virsh ${ms(libvirt.virshMs)}, pipelined ${ms(libvirt.pipelinedMs)})`;
  return [measure, '— (none set)', result, 'info'];
}

/** "RSS flat over a 10-minute run" (bench/soak.ts says what flat is). */
function soakRow(soak: GatewayResults['soak']): string[] {
  const target = `flat: end and trend ≤ +${FLAT_BOUND * 100} % after warm-up`;
  if (!soak) return ['gateway RSS flat over a 10-minute soak', target, 'not run (--soak)', '—'];
  const v = soakVerdict(soak.rssMb);
  const mb = (x: number) => `${fmt(x, 1)} MB`;
  const range = soak.rssMb.length > 0 ? `${mb(Math.min(...soak.rssMb))}–${mb(Math.max(...soak.rssMb))}` : 'none';
  return [
    `gateway RSS flat over a ${fmt(soak.seconds / 60, 1)}-minute soak (requests and tunnels)`,
    target,
    `${mb(v.startMb)} → ${mb(v.endMb)} (${fmt(v.growth * 100, 1)} %, trend ${fmt(v.trend * 100, 1)} %; ${soak.rssMb.length} samples, ${range})`,
    yes(v.flat && soak.seconds >= 600),
  ];
}

/**
 * The gateway's targets, each a ratio or a figure from the same run. "One fleet proxy"
 * is tinyproxy, what every backend runs (process, kvm and gcp guests, the wire fakes' instances): the
 * latency and throughput targets are measured against it. The Node proxy-server of `bench/node-proxy/`
 * (which no backend runs) keeps connections alive and costs about what the gateway costs,
 * so on shared cores its ratio shows the price of a second Node hop: kept as reference rows.
 */
export function gatewayRows(g: GatewayResults | undefined): string[][] {
  if (!g) return [[LATENCY, '≤ 1 ms', 'not run', '—']];
  return [
    ...tinyproxyRows(g.tinyproxy),
    [
      'gateway RSS with 1,000 concurrent CONNECT tunnels (2 cores)',
      '≤ 200 MB, all held',
      `${fmt(g.tunnels.rssMb, 1)} MB, ${g.tunnels.count} held, ${g.tunnels.failed} failed`,
      yes(g.tunnels.rssMb <= 200 && g.tunnels.count === 1000),
    ],
    soakRow(g.soak),
    ...referenceRows(g),
  ];
}

const LATENCY = 'gateway p50 added latency vs one fleet proxy (tinyproxy) directly';

/** The two targets against tinyproxy, the proxy software every fleet proxy runs. */
function tinyproxyRows(t: GatewayResults['tinyproxy']): string[][] {
  const rate = `gateway throughput ÷ direct, one fleet proxy (tinyproxy), ${CLIENTS} clients (median of 10 alternating 1 s rounds)`;
  if (!t)
    return [
      [LATENCY, '≤ 1 ms', 'not run', '—'],
      [rate, '≥ 80 %', 'not run', '—'],
    ];
  const added = t.gatewayP50Ms - t.directP50Ms;
  const ratio = t.gatewayRps / t.directRps;
  return [
    [
      LATENCY,
      '≤ 1 ms',
      `${fmt(added, 3)} ms (p50 ${fmt(t.gatewayP50Ms, 3)} vs ${fmt(t.directP50Ms, 3)} ms)`,
      yes(added <= 1),
    ],
    [
      rate,
      '≥ 80 %',
      `${fmt(ratio * 100, 1)} % (${fmt(t.gatewayRps, 0)} vs ${fmt(t.directRps, 0)} req/s)`,
      yes(ratio >= 0.8),
    ],
  ];
}

/** The same pairs and rounds against the keep-alive Node proxy-server of bench/node-proxy/ (no fleet proxy), and the CPU split. */
function referenceRows(g: GatewayResults): string[][] {
  const added = g.gatewayP50Ms - g.directP50Ms;
  const ratio = g.gatewayRps / g.directRps;
  const node = 'keep-alive Node proxy-server (bench/node-proxy/)';
  return [
    [
      `reference: gateway p50 added latency vs a ${node}`,
      'info',
      `${fmt(added, 3)} ms (p50 ${fmt(g.gatewayP50Ms, 3)} vs ${fmt(g.directP50Ms, 3)} ms)`,
      'info',
    ],
    [
      `reference: gateway throughput ÷ direct, a ${node}, ${CLIENTS} keep-alive clients`,
      'info',
      `${fmt(ratio * 100, 1)} % (${fmt(g.gatewayRps, 0)} vs ${fmt(g.directRps, 0)} req/s)`,
      'info',
    ],
    ...(g.cpuPer1000
      ? [
          [
            'reference: CPU per 1,000 requests through the gateway, gateway vs that Node proxy (same 2 cores)',
            'info',
            `${fmt(g.cpuPer1000.gatewayMs, 0)} vs ${fmt(g.cpuPer1000.fleetMs, 0)} ms (${fmt(g.cpuPer1000.gatewayMs / g.cpuPer1000.fleetMs, 2)}×)`,
            'info',
          ],
        ]
      : []),
  ];
}
