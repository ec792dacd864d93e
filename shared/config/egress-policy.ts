/**
 * The egress policy of a provider's proxies — which destinations a fleet proxy may connect to — and
 * its renderings: the nftables table a guest or relay host loads (the kernel fence, against resolved
 * addresses), tinyproxy's `ConnectPort` lines (a second layer, CONNECT only) and a Kubernetes
 * NetworkPolicy's egress rules. Defined once here; every backend renders it (docs/operations.md,
 * "Egress fence").
 */
import { isIPv4, isIPv6 } from 'node:net';
import { z } from 'zod';

const port = z.number().int().min(1).max(65535);
/** A port, or an inclusive range `[low, high]`. */
const portSpec = z.union([
  port,
  z.tuple([port, port]).refine(([lo, hi]) => lo <= hi, 'a port range must be [low, high] with low <= high'),
]);
export type PortSpec = z.infer<typeof portSpec>;

/** An IPv4 or IPv6 range in CIDR notation whose address is the range's first (`10.0.0.0/8`, `fc00::/7`). */
const cidr = z
  .string()
  .max(64)
  .superRefine((value, ctx) => {
    const reason = cidrProblem(value);
    if (reason) ctx.addIssue({ code: 'custom', message: reason });
  });

/**
 * Refused by default: link-local (the metadata server 169.254.169.254 among them), loopback, this
 * network, RFC 1918, CGNAT, multicast and reserved IPv4; loopback, IPv4-mapped, unique-local,
 * link-local and multicast IPv6.
 */
export const DEFAULT_DENIED: readonly string[] = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '224.0.0.0/3',
  '::/127',
  '::ffff:0:0/96',
  'fc00::/7',
  'fe80::/10',
  'ff00::/8',
];

export const egressPolicySchema = z.strictObject({
  /** Destination ranges a proxy may not connect to (unless an `allow` entry says so). */
  deny: z
    .array(cidr)
    .max(256)
    .default([...DEFAULT_DENIED]),
  /** Also refuse every address of the machine the proxy runs on (nftables `fib daddr type local`). */
  denyHost: z.boolean().default(true),
  /** Destination ports allowed to every address not denied (CONNECT and plain requests alike). */
  ports: z.array(portSpec).min(1).max(64).default([80, 443]),
  /** Exceptions, tried first: these destinations are allowed on these ports (default: `ports`). */
  allow: z
    .array(z.strictObject({ cidr, ports: z.array(portSpec).min(1).max(64).optional() }))
    .max(64)
    .default([]),
});
/** A provider's egress policy, defaults applied. */
export type EgressPolicy = z.infer<typeof egressPolicySchema>;
/** What a config file may write (every field optional). */
export type EgressPolicyInput = z.input<typeof egressPolicySchema>;

/** Whether the policy lets a proxy connect to `port` anywhere: its `ports`, or an exception's. */
export function admitsPort(policy: EgressPolicy, port: number): boolean {
  const within = (specs: readonly PortSpec[]) =>
    specs.some((spec) => (typeof spec === 'number' ? spec === port : spec[0] <= port && port <= spec[1]));
  return within(policy.ports) || policy.allow.some((a) => within(a.ports ?? policy.ports));
}

/**
 * Why a policy would refuse every probe to `echoUrl` (its port is allowed nowhere), or undefined.
 * Only the port: the address a name resolves to is the kernel's to judge, at connect time.
 */
export function echoRefusal(policy: EgressPolicy, echoUrl: string): string | undefined {
  let port: number;
  try {
    const url = new URL(echoUrl);
    port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  } catch {
    return undefined; // echoUrl's own check names it
  }
  if (admitsPort(policy, port)) return undefined;
  return `allows no connection to port ${port}, echoUrl's: every probe through these proxies would fail (add ${port} to ports, or an allow entry for the echo endpoint)`;
}

/** The safe default: public addresses on ports 80 and 443 only. */
export const DEFAULT_EGRESS_POLICY: EgressPolicy = egressPolicySchema.parse({});

/** Why `value` is not a CIDR range, or undefined when it is one. */
function cidrProblem(value: string): string | undefined {
  const [address, bits, ...rest] = value.split('/');
  const v4 = address !== undefined && isIPv4(address);
  if (rest.length > 0 || address === undefined || !(v4 || isIPv6(address)) || !/^\d{1,3}$/.test(bits ?? ''))
    return 'must be an IPv4 or IPv6 range in CIDR notation, like 10.0.0.0/8 or fc00::/7';
  const max = v4 ? 32 : 128;
  if (Number(bits) > max) return `the prefix length must be 0 to ${max}`;
  const value128 = v4 ? ipv4Bits(address) : ipv6Bits(address);
  const hostBits = BigInt(max - Number(bits));
  if (value128 % (1n << hostBits) !== 0n) return `${address} is not the first address of a /${bits}`;
  return undefined;
}

function ipv4Bits(address: string): bigint {
  return address.split('.').reduce((n, part) => n * 256n + BigInt(part), 0n);
}

function ipv6Bits(address: string): bigint {
  // An embedded dotted quad (::ffff:1.2.3.4) becomes two groups first.
  const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(address);
  const text = dotted ? `${dotted[1]}${hexQuad(dotted[2] ?? '')}` : address;
  const [head = '', tail] = text.split('::');
  const groups = (s: string) => (s === '' ? [] : s.split(':'));
  const missing = 8 - groups(head).length - groups(tail ?? '').length;
  const all = [...groups(head), ...(tail === undefined ? [] : Array<string>(missing).fill('0')), ...groups(tail ?? '')];
  return all.reduce((n, group) => n * 65536n + BigInt(`0x${group}`), 0n);
}

function hexQuad(quad: string): string {
  const n = Number(ipv4Bits(quad));
  return `${Math.floor(n / 65536).toString(16)}:${(n % 65536).toString(16)}`;
}

const isV4Range = (range: string) => isIPv4(range.split('/')[0] ?? '');

/** `80`, `[8000, 8999]` → nftables `80`, `8000-8999`. */
const nftPort = (p: PortSpec) => (typeof p === 'number' ? `${p}` : `${p[0]}-${p[1]}`);
const nftSet = (items: readonly string[]) => `{ ${items.join(', ')} }`;

/** What the nftables table fences and how it is named. */
export interface FenceTarget {
  /** The table (`inet <table>`): one per fenced owner, replaced as a whole when loaded again. */
  table: string;
  /** The user whose sockets are fenced: a name (resolved when the table loads) or a uid. */
  owner: string | number;
}

/**
 * The nftables script of the kernel fence: an `output` hook that sends every packet of a socket
 * owned by `owner` (`meta skuid`) through the policy. Replies to the proxy's clients and DNS
 * queries pass (a proxy carries TCP only, so a UDP query is never a client's); then the `allow`
 * exceptions, then the denied ranges and the host's own addresses, then the allowed ports; anything
 * else is rejected, so the proxy's `connect` fails at once. Other users (the guest agent, cloud-init)
 * are not matched and still reach the metadata server. Loading it again replaces the table.
 *
 * @example nft -f fence.nft  (as root)
 */
export function nftFence(policy: EgressPolicy, target: FenceTarget): string {
  const owner = typeof target.owner === 'number' ? `${target.owner}` : JSON.stringify(target.owner);
  const daddr = (ranges: readonly string[], verdict: string) => {
    const v4 = ranges.filter(isV4Range);
    const v6 = ranges.filter((r) => !isV4Range(r));
    return [
      ...(v4.length > 0 ? [`ip daddr ${nftSet(v4)} ${verdict}`] : []),
      ...(v6.length > 0 ? [`ip6 daddr ${nftSet(v6)} ${verdict}`] : []),
    ];
  };
  const ports = (specs: readonly PortSpec[]) => `tcp dport ${nftSet(specs.map(nftPort))}`;
  // A TCP connect refused with a reset fails at once; `reject` alone answers anything else.
  const refuse = (match: string) => [
    `meta l4proto tcp ${match} reject with tcp reset`.replace(/ {2,}/g, ' '),
    `${match} reject`.trim(),
  ];
  const rules = [
    'ct state established,related accept',
    'udp dport 53 accept',
    ...policy.allow.flatMap((a) => daddr([a.cidr], `${ports(a.ports ?? policy.ports)} accept`)),
    ...(policy.denyHost ? refuse('fib daddr type local') : []),
    ...daddr(policy.deny, '').flatMap((match) => refuse(match.trimEnd())),
    `${ports(policy.ports)} accept`,
    ...refuse(''),
  ];
  return [
    '#!/usr/sbin/nft -f',
    `# The egress fence of the proxy user ${owner}: written by egress-fleet (docs/operations.md, "Egress fence").`,
    // Declaring the table first makes the delete succeed on a first load too.
    `table inet ${target.table}`,
    `delete table inet ${target.table}`,
    `table inet ${target.table} {`,
    '  chain output {',
    '    type filter hook output priority 0; policy accept;',
    `    meta skuid ${owner} jump fence`,
    '  }',
    '  chain fence {',
    ...rules.map((rule) => `    ${rule}`),
    '  }',
    '}',
    '',
  ].join('\n');
}

/**
 * tinyproxy's `ConnectPort` lines: CONNECT only to the allowed ports. Without any line tinyproxy
 * allows every port, so a policy whose ports cannot be listed (a range wider than 64 ports) gets
 * none and relies on the kernel fence alone.
 */
export function connectPortLines(policy: EgressPolicy): string[] {
  const specs = [...policy.ports, ...policy.allow.flatMap((a) => a.ports ?? [])];
  const ports = new Set<number>();
  for (const spec of specs) {
    const [lo, hi] = typeof spec === 'number' ? [spec, spec] : spec;
    if (hi - lo >= 64) return [];
    for (let p = lo; p <= hi; p++) ports.add(p);
  }
  return [...ports].sort((a, b) => a - b).map((p) => `ConnectPort ${p}`);
}

/**
 * The ports of `0-65535` other than `taken`, as ranges: the local stack's exception for loopback
 * (every port but the stack's own).
 */
export function portsExcept(taken: readonly number[]): PortSpec[] {
  const sorted = [...new Set(taken)].filter((p) => p >= 1 && p <= 65535).sort((a, b) => a - b);
  const ranges: PortSpec[] = [];
  let next = 1;
  for (const p of sorted) {
    if (p > next) ranges.push(p - 1 === next ? next : [next, p - 1]);
    next = p + 1;
  }
  if (next <= 65535) ranges.push(next === 65535 ? next : [next, 65535]);
  return ranges;
}

/**
 * The local stack's policy: loopback stands in for the Internet, so loopback destinations are
 * allowed on every port except `stackPorts` (the API, the functions and their fronts, the
 * emulators, the relay, the gateway, metrics): a fleet proxy never reaches the control plane that
 * runs it. The rest of the default holds.
 */
export function localEgressPolicy(stackPorts: readonly number[]): EgressPolicy {
  return egressPolicySchema.parse({
    denyHost: false,
    allow: [
      { cidr: '127.0.0.0/8', ports: portsExcept(stackPorts) },
      { cidr: '::1/128', ports: portsExcept(stackPorts) },
    ],
  });
}

/** One egress rule of a Kubernetes NetworkPolicy (networking.k8s.io/v1). */
export interface NetworkPolicyEgressRule {
  to: ({ ipBlock: { cidr: string; except?: string[] } } | Record<string, unknown>)[];
  ports: { protocol: 'TCP' | 'UDP'; port: number; endPort?: number }[];
}

/**
 * The policy as NetworkPolicy egress rules (allowed traffic is the union of the rules): DNS to
 * the cluster's resolver, the `allow` exceptions, and the allowed ports to `0.0.0.0/0` and `::/0`
 * except the denied ranges. `denyHost` has no NetworkPolicy form: the node's addresses are denied
 * when they lie in a denied range (RFC 1918 in most clusters).
 * https://kubernetes.io/docs/concepts/services-networking/network-policies/
 */
export function networkPolicyEgress(policy: EgressPolicy): NetworkPolicyEgressRule[] {
  const ports = (specs: readonly PortSpec[]) =>
    specs.map((p) =>
      typeof p === 'number'
        ? { protocol: 'TCP' as const, port: p }
        : { protocol: 'TCP' as const, port: p[0], endPort: p[1] },
    );
  const within = (all: string, v4: boolean) => {
    const except = policy.deny.filter((r) => isV4Range(r) === v4 && r !== all);
    return { ipBlock: { cidr: all, ...(except.length > 0 ? { except } : {}) } };
  };
  return [
    {
      to: [{ namespaceSelector: {}, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }],
      ports: [
        { protocol: 'UDP', port: 53 },
        { protocol: 'TCP', port: 53 },
      ],
    },
    ...policy.allow.map((a) => ({ to: [{ ipBlock: { cidr: a.cidr } }], ports: ports(a.ports ?? policy.ports) })),
    { to: [within('0.0.0.0/0', true), within('::/0', false)], ports: ports(policy.ports) },
  ];
}
