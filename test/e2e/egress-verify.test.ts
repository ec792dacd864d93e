/**
 * Egress location on the local stack: the echo answers the relay's loopback egress addresses as
 * public-looking ones (infra/local/echo-map.ts), the check function locates them in the packaged
 * database, and the API, the CLI and discovery show and filter on country and AS.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { discoveryListSchema, proxySchema } from '../../shared/api/schema.js';
import { LOCAL_DEFAULT_CONFIG } from '../../shared/config/local-default.js';
import { localEgressPolicy } from '../../shared/config/egress-policy.js';
import { LOCAL_RELAY_CONFIG } from '../../relay/config.js';
import { eventually } from '../support/eventually.js';
import { cliOf, startLocalStack, type RunningStack } from './stack.js';

const OFFSET = 1000;
const dir = mkdtempSync(join(tmpdir(), 'egress-e2e-verify-'));
let stack: RunningStack;
const egress = cliOf(() => stack);

beforeAll(async () => {
  // `local-b` leaves from 127.2.0.0/16, which the echo answers as Hetzner's 5.9.0.0/16 (DE): saying
  // FR here makes every one of its proxies a mismatch.
  const providers = LOCAL_DEFAULT_CONFIG.providers.map((p) => (p.name === 'local-b' ? { ...p, country: 'FR' } : p));
  const config = join(dir, 'egress.yaml');
  writeFileSync(config, stringify({ ...LOCAL_DEFAULT_CONFIG, providers }));
  writeFileSync(
    join(dir, 'fleet.yaml'),
    ['us-1', 'us-2', 'fr-1']
      .map((name) =>
        stringify({
          apiVersion: 'egress.dev/v1',
          kind: 'Proxy',
          metadata: { name },
          spec: { provider: name.startsWith('us') ? 'local' : 'local-b' },
        }),
      )
      .join('---\n'),
  );
  // The embedded relay config with ports of its own (another stack may hold the default ones) and
  // the same egress ranges, which the echo maps.
  const relayConfig = join(dir, 'relay.yaml');
  const backends = LOCAL_RELAY_CONFIG.backends.map((b, i) => ({
    ...b,
    stateDir: join(dir, 'relay-state', b.provider),
    portRange: [24000 + i * 100, 24099 + i * 100],
    egress: localEgressPolicy([]),
  }));
  writeFileSync(relayConfig, stringify({ ...LOCAL_RELAY_CONFIG, backends }));
  stack = await startLocalStack({
    EGRESS_PORT_OFFSET: String(OFFSET),
    EGRESS_SAMPLES: 'none',
    EGRESS_CONFIG: config,
    EGRESS_RELAY_CONFIG: relayConfig,
  });
  const applied = await egress('apply', '-f', join(dir, 'fleet.yaml'), '--wait', '--timeout', '150s');
  expect(applied.code, applied.stderr).toBe(0);
}, 240_000);

afterAll(async () => {
  if (stack && stack.process.exitCode === null) await stack.interrupt();
});

const json = async (...args: string[]) => {
  const r = await egress(...args);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as unknown;
};

describe('egress verify: on the local stack', () => {
  it('puts country, AS and organisation on status.health and verifies them against the provider', async () => {
    await eventually(
      async () => {
        const us = proxySchema.parse(await json('get', 'proxy', 'us-1', '-o', 'json'));
        expect(us.status.health).toMatchObject({ country: 'US', asn: 714, asnOrg: 'Apple Inc.' });
        expect(us.status.health?.egressIp).toMatch(/^17\.0\./);
        expect(us.status.conditions).toContainEqual(
          expect.objectContaining({ type: 'EgressVerified', status: 'True', reason: 'CountryMatches' }),
        );
        const fr = proxySchema.parse(await json('get', 'proxy', 'fr-1', '-o', 'json'));
        expect(fr.status.health).toMatchObject({ country: 'DE', asn: 24940 });
        const flagged = fr.status.conditions.find((c) => c.type === 'EgressVerified');
        expect(flagged).toMatchObject({ status: 'False', reason: 'CountryMismatch' });
        expect(flagged?.message).toMatch(/is in DE; the placement expects FR$/);
      },
      60_000,
      1000,
    );
  });

  it('discovery filters on country (strict) and AS, and its entries carry both', async () => {
    const names = async (...flags: string[]) =>
      discoveryListSchema
        .parse(await json('discover', '-o', 'json', ...flags))
        .map((e) => e.name)
        .sort();
    expect(await names('--country', 'US')).toEqual(['us-1', 'us-2']);
    // fr-1 is located in DE, but its provider expected FR: strict country leaves it out.
    expect(await names('--country', 'DE')).toEqual([]);
    expect(await names('--country', 'FR')).toEqual([]);
    expect(await names('--asn', '24940')).toEqual(['fr-1']);
    const all = discoveryListSchema.parse(await json('discover', '-o', 'json'));
    expect(all.find((e) => e.name === 'us-2')).toMatchObject({ country: 'US', asn: 714 });
    const bad = await egress('discover', '--country', 'USA');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--country must be an ISO 3166-1 alpha-2 country code');
    const api = stack.localEnv();
    const refused = await fetch(`${api['EGRESS_API_URL']}/v1/discovery?asn=x`, {
      headers: { authorization: `Bearer ${api['EGRESS_DISCOVER_TOKEN']}` },
    });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: { field: 'asn' } });
  });

  it('the CLI shows country and AS, and the database releases', async () => {
    const wide = await egress('get', 'proxies', '-o', 'wide');
    const row = (name: string) => wide.stdout.split('\n').find((l) => l.startsWith(`${name} `)) ?? '';
    expect(row('us-1')).toMatch(/ 17\.0\.\d+\.\d+ +US +AS714 /);
    expect(row('fr-1')).toMatch(/ 5\.9\.\d+\.\d+ +DE! +AS24940 /);
    const providers = await egress('get', 'providers');
    expect(providers.stdout).toMatch(
      /Egress location database: @ip-location-db\/geo-whois-asn-country-mmdb \S+ \(published \d{4}-\d{2}-\d{2}T/,
    );
  });
});
