/** Output formats: aligned tables (table, wide), JSON, YAML, kubectl ages, and describe. */
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { proxySchema, proxyWithEventsSchema, providerSchema } from '../shared/api/schema.js';
import { describeProxy } from './describe.js';
import { alignRows, formatProviders, formatProxies, humanDuration } from './format.js';

const NOW = Date.parse('2030-01-01T12:00:00Z');
const ago = (ms: number) => new Date(NOW - ms).toISOString();

const ready = proxySchema.parse({
  apiVersion: 'egress.dev/v1',
  kind: 'Proxy',
  metadata: { name: 'local-1', labels: { team: 'demo' }, generation: 1, createdAt: ago(3_600_000) },
  spec: { provider: 'local', placement: { catalogue: 'loopback' }, port: 0 },
  status: {
    phase: 'Ready',
    address: '127.0.0.1:20000',
    instance: {
      name: 'ep-local-1-1a2b3c4d',
      ip: '127.0.0.1',
      port: 20000,
      state: 'Running',
      createdAt: ago(3_500_000),
    },
    conditions: [
      {
        type: 'Provisioned',
        status: 'True',
        reason: 'Created',
        message: 'instance running',
        lastTransitionTime: ago(60_000),
      },
      { type: 'Ready', status: 'True', reason: 'ProbeSucceeded', message: 'ok', lastTransitionTime: ago(30_000) },
    ],
    health: {
      ok: true,
      latencyMs: 3.4,
      egressIp: '203.0.113.9',
      country: 'US',
      asn: 714,
      lastProbeAt: ago(2000),
      consecutiveFailures: 0,
    },
  },
});
const pending = proxySchema.parse({
  apiVersion: 'egress.dev/v1',
  kind: 'Proxy',
  metadata: { name: 'a-very-long-proxy-name', labels: {}, generation: 1, createdAt: ago(5000) },
  spec: { provider: 'gce-europe', placement: {}, port: 0 },
  status: { phase: 'Pending', conditions: [] },
});

describe('humanDuration', () => {
  it.each([
    [0, '0s'],
    [45_000, '45s'],
    [119_000, '119s'],
    [192_000, '3m12s'],
    [600_000, '10m'],
    [42 * 60_000, '42m'],
    [5 * 3_600_000 + 10 * 60_000, '5h10m'],
    [23 * 3_600_000, '23h'],
    [51 * 3_600_000, '2d3h'],
    [12 * 86_400_000, '12d'],
    [800 * 86_400_000, '2y70d'],
    [-5000, '0s'],
  ])('%d ms → %s', (ms, text) => expect(humanDuration(ms)).toBe(text));
});

describe('tables', () => {
  it('aligns columns with three spaces and no trailing blanks', () => {
    expect(
      alignRows([
        ['NAME', 'X'],
        ['a-long-name', 'y'],
        ['b', ''],
      ]),
    ).toEqual(['NAME          X', 'a-long-name   y', 'b']);
  });

  it('prints NAME PROVIDER PHASE ADDRESS AGE, <none> for what is missing', () => {
    expect(formatProxies([pending, ready], 'table', NOW)).toBe(
      [
        'NAME                     PROVIDER     PHASE     ADDRESS           AGE',
        'a-very-long-proxy-name   gce-europe   Pending   <none>            5s',
        'local-1                  local        Ready     127.0.0.1:20000   60m',
        '',
      ].join('\n'),
    );
  });

  it('egress verify: wide adds EGRESS-IP COUNTRY ASN LATENCY INSTANCE', () => {
    const [header, , row] = formatProxies([pending, ready], 'wide', NOW).split('\n');
    expect(header?.split(/\s{3,}/)).toEqual([
      'NAME',
      'PROVIDER',
      'PHASE',
      'ADDRESS',
      'AGE',
      'EGRESS-IP',
      'COUNTRY',
      'ASN',
      'LATENCY',
      'INSTANCE',
    ]);
    expect(row?.split(/\s{3,}/)).toEqual([
      'local-1',
      'local',
      'Ready',
      '127.0.0.1:20000',
      '60m',
      '203.0.113.9',
      'US',
      'AS714',
      '3ms',
      'ep-local-1-1a2b3c4d',
    ]);
    expect(header?.indexOf('EGRESS-IP')).toBe(row?.indexOf('203.0.113.9'));
  });

  it('prints providers with status, latency and last check', () => {
    const p = providerSchema.parse({
      name: 'local',
      type: 'process',
      status: 'Healthy',
      message: 'relay local answered',
      latencyMs: 4,
      lastCheckAt: ago(20_000),
    });
    const lines = formatProviders({ items: [p] }, 'table', NOW)
      .trimEnd()
      .split('\n');
    expect(lines[0]?.split(/\s{3,}/)).toEqual(['NAME', 'TYPE', 'STATUS', 'LATENCY', 'LAST-CHECK', 'MESSAGE']);
    expect(lines[1]?.split(/\s{3,}/)).toEqual(['local', 'process', 'Healthy', '4ms', '20s', 'relay local answered']);
  });

  it('egress verify: providers end with the location database releases', () => {
    const release = (name: string) => ({
      package: name,
      version: '2.3.2026061719',
      publishedAt: '2026-06-17T19:00:00Z',
    });
    const list = { items: [], egressDatabase: { country: release('c-db'), asn: release('a-db') } };
    expect(formatProviders(list, 'table', NOW)).toContain(
      'Egress location database: c-db 2.3.2026061719 (published 2026-06-17T19:00:00Z); a-db 2.3.2026061719',
    );
  });

  it('egress verify: a country the provider did not expect is marked', () => {
    const flagged = proxySchema.parse({
      ...ready,
      status: {
        ...ready.status,
        conditions: [{ type: 'EgressVerified', status: 'False', reason: 'CountryMismatch', message: 'm' }],
      },
    });
    const [, row] = formatProxies([flagged], 'wide', NOW).split('\n');
    expect(row?.split(/\s{3,}/)).toContain('US!');
  });
});

describe('json and yaml', () => {
  it('a list is {items} and round-trips, unknown fields included', () => {
    const extra = proxySchema.parse({ ...ready, status: { ...ready.status, futureField: 1 } });
    const json: unknown = JSON.parse(formatProxies([extra], 'json', NOW));
    expect(json).toEqual({ items: [extra] });
    expect(json).toHaveProperty('items.0.status.futureField', 1);
    expect(parse(formatProxies([extra], 'yaml', NOW))).toEqual({ items: [extra] });
  });

  it('a single proxy is the object itself', () => {
    expect(JSON.parse(formatProxies([ready], 'json', NOW, true))).toEqual(ready);
    expect(parse(formatProxies([ready], 'yaml', NOW, true))).toEqual(ready);
  });
});

describe('describeProxy', () => {
  it('shows spec, status, conditions and events oldest first, like kubectl describe', () => {
    const text = describeProxy(
      proxyWithEventsSchema.parse({
        ...ready,
        events: [
          { at: ago(30_000), type: 'Normal', reason: 'Ready', message: 'probe through the proxy succeeded' },
          { at: ago(90_000), type: 'Normal', reason: 'Created', message: 'instance created' },
        ],
      }),
      NOW,
    );
    expect(text).toMatch(/^Name: +local-1$/m);
    expect(text).toMatch(/^Labels: +team=demo$/m);
    expect(text).toMatch(/^Placement: +catalogue=loopback$/m);
    expect(text).toMatch(/^Phase: +Ready$/m);
    expect(text).toMatch(/^ {2}Egress IP: +203\.0\.113\.9$/m);
    expect(text).toMatch(/^Conditions:\n {2}Type +Status +Reason +Age +Message\n {2}-+ +-+/m);
    expect(text).toMatch(/^ {2}Provisioned +True +Created +60s +instance running$/m);
    const events = text.slice(text.indexOf('Events:'));
    expect(events).toMatch(/Normal +Created +90s +instance created\n {2}Normal +Ready +30s +probe through/);
  });

  it('says <none> without conditions or events', () => {
    const text = describeProxy(proxyWithEventsSchema.parse({ ...pending, events: [] }), NOW);
    expect(text).toMatch(/^Conditions: +<none>$/m);
    expect(text).toMatch(/^Events: +<none>$/m);
    expect(text).toMatch(/^Address: +<none>$/m);
  });
});
