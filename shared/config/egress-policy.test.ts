/** The egress policy: its schema's errors, and its renderings checked by the tools that read them. */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  connectPortLines,
  DEFAULT_EGRESS_POLICY,
  egressPolicySchema,
  localEgressPolicy,
  networkPolicyEgress,
  nftFence,
  portsExcept,
} from './egress-policy.js';
import { configSchema, providerConfigSchema } from './schema.js';

const NFT = '/usr/sbin/nft';

describe('egress policy schema', () => {
  it('defaults to public addresses on 80 and 443, with the metadata server, loopback and private ranges denied', () => {
    expect(DEFAULT_EGRESS_POLICY.ports).toEqual([80, 443]);
    expect(DEFAULT_EGRESS_POLICY.denyHost).toBe(true);
    for (const range of [
      '169.254.0.0/16',
      '127.0.0.0/8',
      '10.0.0.0/8',
      '172.16.0.0/12',
      '192.168.0.0/16',
      '100.64.0.0/10',
      'fc00::/7',
      'fe80::/10',
      '::ffff:0:0/96',
    ])
      expect(DEFAULT_EGRESS_POLICY.deny).toContain(range);
  });

  it.each([
    [{ deny: ['10.0.0.1/8'] }, 'deny.0', 'not the first address'],
    [{ deny: ['10.0.0.0'] }, 'deny.0', 'CIDR'],
    [{ deny: ['fc00::/129'] }, 'deny.0', 'prefix length'],
    [{ ports: [0] }, 'ports.0', ''],
    [{ ports: [[443, 80]] }, 'ports.0', 'low <= high'],
    [{ ports: [] }, 'ports', ''],
    [{ allow: [{ cidr: 'example.com/32' }] }, 'allow.0.cidr', 'CIDR'],
    [{ allow: [{ cidr: '127.0.0.0/8', port: 80 }] }, 'allow.0', ''],
    [{ denyHosts: true }, '', 'denyHosts'],
  ])('%j is refused at %s', (input, field, message) => {
    const result = egressPolicySchema.safeParse(input);
    expect(result.success).toBe(false);
    const issue = result.error?.issues[0];
    expect(issue?.path.join('.')).toBe(field);
    expect(issue?.message ?? '').toContain(message);
  });

  it('accepts IPv6 and embedded dotted quads', () => {
    expect(
      egressPolicySchema.safeParse({ deny: ['::ffff:0:0/96', '::ffff:127.0.0.0/104', '2001:db8::/32'] }).success,
    ).toBe(true);
  });
});

describe('egress policy renderings', () => {
  it('ConnectPort lists the allowed ports, and none when a range is too wide to list', () => {
    expect(connectPortLines(DEFAULT_EGRESS_POLICY)).toEqual(['ConnectPort 80', 'ConnectPort 443']);
    const exception = egressPolicySchema.parse({ allow: [{ cidr: '10.1.2.3/32', ports: [8088, [9000, 9001]] }] });
    expect(connectPortLines(exception)).toEqual([
      'ConnectPort 80',
      'ConnectPort 443',
      'ConnectPort 8088',
      'ConnectPort 9000',
      'ConnectPort 9001',
    ]);
    expect(connectPortLines(localEgressPolicy([8080]))).toEqual([]);
  });

  it.each([
    [[], [[1, 65535]]],
    [[1], [[2, 65535]]],
    [[65535], [[1, 65534]]],
    [
      [8080, 8081, 8085],
      [
        [1, 8079],
        [8082, 8084],
        [8086, 65535],
      ],
    ],
    [
      [3, 1],
      [2, [4, 65535]],
    ],
  ])('portsExcept(%j) = %j', (taken, ranges) => {
    expect(portsExcept(taken)).toEqual(ranges);
  });

  it('the nftables table fences the owner: replies and DNS pass, exceptions first, then denials, then the ports', () => {
    const script = nftFence(egressPolicySchema.parse({ allow: [{ cidr: '10.9.0.1/32', ports: [8088] }] }), {
      table: 'egress_fence',
      owner: 'tinyproxy',
    });
    const rules = script.split('\n').map((l) => l.trim());
    const at = (rule: string) => rules.findIndex((r) => r.startsWith(rule));
    expect(rules).toContain('meta skuid "tinyproxy" jump fence');
    expect(at('ct state established,related accept')).toBeLessThan(
      at('ip daddr { 10.9.0.1/32 } tcp dport { 8088 } accept'),
    );
    expect(at('ip daddr { 10.9.0.1/32 }')).toBeLessThan(at('meta l4proto tcp ip daddr { 0.0.0.0/8, 10.0.0.0/8'));
    expect(at('meta l4proto tcp fib daddr type local reject')).toBeGreaterThan(0);
    expect(at('tcp dport { 80, 443 } accept')).toBeGreaterThan(at('ip6 daddr'));
    expect(rules.at(-4)).toBe('reject');
  });

  it.skipIf(!existsSync(NFT))('nft accepts the tables it is given (checked, not loaded)', () => {
    for (const policy of [DEFAULT_EGRESS_POLICY, localEgressPolicy([8080, 8085, 8090])])
      for (const owner of ['nobody', 65534]) {
        const script = nftFence(policy, { table: 'egress_fence_check', owner });
        expect(() =>
          execFileSync(NFT, ['-c', '-f', '-'], { input: script, stdio: ['pipe', 'pipe', 'pipe'] }),
        ).not.toThrow();
      }
  });

  it('the NetworkPolicy allows DNS, the exceptions, and the ports everywhere but the denied ranges', () => {
    const rules = networkPolicyEgress(
      egressPolicySchema.parse({ allow: [{ cidr: '10.9.0.0/16', ports: [[8000, 8099]] }] }),
    );
    expect(rules[1]).toEqual({
      to: [{ ipBlock: { cidr: '10.9.0.0/16' } }],
      ports: [{ protocol: 'TCP', port: 8000, endPort: 8099 }],
    });
    const open = rules[2];
    expect(open?.ports).toEqual([
      { protocol: 'TCP', port: 80 },
      { protocol: 'TCP', port: 443 },
    ]);
    expect(open?.to[0]).toEqual({
      ipBlock: { cidr: '0.0.0.0/0', except: expect.arrayContaining(['169.254.0.0/16', '10.0.0.0/8']) as unknown },
    });
    expect(open?.to[1]).toEqual({ ipBlock: { cidr: '::/0', except: expect.arrayContaining(['fc00::/7']) as unknown } });
  });
});

describe('egress in the providers config', () => {
  it('a bad entry is refused naming its field under the provider', () => {
    const result = providerConfigSchema.safeParse({ name: 'g', type: 'gcp', egress: { deny: ['10.0.0.0/33'] } });
    expect(result.error?.issues[0]?.path).toEqual(['egress', 'deny', 0]);
  });

  it("a relay-backed provider's policy belongs to its relay's backend entry, where it is enforced", () => {
    const result = providerConfigSchema.safeParse({ name: 'lab', type: 'kvm', relay: 'r', egress: {} });
    expect(result.error?.issues[0]?.path).toEqual(['egress']);
    expect(result.error?.issues[0]?.message).toContain('relay.backends[].egress');
  });

  it('an echoUrl whose port the policy allows nowhere is refused, naming the provider (every probe would fail)', () => {
    const config = (echoUrl: string, egress?: unknown) =>
      configSchema.safeParse({
        installationId: 'prod',
        echoUrl,
        providers: [{ name: 'g', type: 'gcp', ...(egress === undefined ? {} : { egress }) }],
      });
    const refused = config('http://echo.example.com:8088/');
    expect(refused.error?.issues[0]?.path).toEqual(['providers', 0, 'egress']);
    expect(refused.error?.issues[0]?.message).toContain("port 8088, echoUrl's");
    expect(config('http://echo.example.com/').success).toBe(true);
    // A loopback echo is a local stand-in (the wire fakes), which no guest's fence sees.
    expect(config('http://127.0.0.1:8088/').success).toBe(true);
    expect(config('https://echo.example.com/').success).toBe(true);
    expect(config('http://echo.example.com:8088/', { ports: [80, 443, 8088] }).success).toBe(true);
    expect(
      config('http://echo.example.com:8088/', { allow: [{ cidr: '203.0.113.5/32', ports: [8088] }] }).success,
    ).toBe(true);
  });
});
