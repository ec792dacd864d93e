/** Names, durations, the spec hash and config validation. */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../config/load.js';
import { LOCAL_DEFAULT_CONFIG } from '../config/local-default.js';
import { parseDuration } from './duration.js';
import { dnsLabel, instanceName } from './names.js';
import { specSchema } from './proxy.js';
import { specHash } from './spec-hash.js';

describe('names', () => {
  it.each([
    ['a', true],
    ['eu-1', true],
    ['1a', true],
    ['-a', false],
    ['a-', false],
    ['A', false],
    ['a_b', false],
    ['a'.repeat(63), true],
    ['a'.repeat(64), false],
    ['', false],
    ['é', false],
  ])('dnsLabel(%j) valid=%s', (name, valid) => expect(dnsLabel.safeParse(name).success).toBe(valid));
  it('instance names are deterministic, per installation, DNS-1123 and start with a letter', () => {
    const long = `9${'x'.repeat(62)}`;
    for (const proxy of ['a', 'eu-1', long]) {
      const n = instanceName('prod', proxy);
      expect(n).toBe(instanceName('prod', proxy));
      expect(n).not.toBe(instanceName('staging', proxy));
      expect(dnsLabel.safeParse(n).success).toBe(true);
      expect(n).toMatch(/^[a-z]/);
    }
    expect(instanceName('prod', `${'x'.repeat(55)}a`)).not.toBe(instanceName('prod', `${'x'.repeat(55)}b`));
  });
});

describe('durations', () => {
  it.each([
    ['90s', 90_000],
    ['15m', 900_000],
    ['24h', 86_400_000],
    ['1h30m', 5_400_000],
    ['7d', 604_800_000],
    ['', undefined],
    ['1x', undefined],
    ['h', undefined],
    ['-1h', undefined],
  ])('%j → %s', (text, ms) => expect(parseDuration(text)).toBe(ms));
});

describe('spec hash', () => {
  const spec = specSchema.parse({ provider: 'local', placement: { catalogue: 'small' } });
  it('covers the resolved placement, so an edited catalogue entry changes it', () => {
    expect(specHash(spec, { zone: 'a' })).not.toBe(specHash(spec, { zone: 'b' }));
    expect(specHash(spec, { zone: 'a', size: 1 })).toBe(specHash(spec, { size: 1, zone: 'a' }));
  });
  it('ignores maxAge (rotation does not reshape the instance)', () => {
    expect(specHash({ ...spec, maxAge: '1h' }, {})).toBe(specHash(spec, {}));
    expect(specHash({ ...spec, port: 8080 }, {})).not.toBe(specHash(spec, {}));
  });
});

describe('config', () => {
  it('the embedded default is valid and frozen', () => {
    const c = parseConfig(LOCAL_DEFAULT_CONFIG);
    expect(c.providers[0]?.name).toBe('local');
    expect(Object.isFrozen(c.providers)).toBe(true);
  });
  it.each([
    [{ providers: [{ name: 'p', type: 'process' }] }, 'config.providers.0.relay'],
    [{ providers: [{ name: 'P', type: 'process', relay: 'r' }] }, 'config.providers.0.name'],
    [{ providers: [{ name: 'p', type: 'ftp' }] }, 'config.providers.0.type'],
    [{ echoUrl: 'not a url' }, 'config.echoUrl'],
    [{ unknownKey: 1 }, 'config'],
  ])('names the field of an error: %j', (patch, field) => {
    expect(() => parseConfig({ ...LOCAL_DEFAULT_CONFIG, ...patch })).toThrow(
      new RegExp(`^${field.replace(/\./g, '\\.')}`),
    );
  });
  it('environment overrides project, installation and echo URL', () => {
    const c = parseConfig(LOCAL_DEFAULT_CONFIG, {
      EGRESS_PROJECT: 'p1',
      EGRESS_INSTALLATION: 'prod',
      EGRESS_ECHO_URL: 'http://127.0.0.1:1/',
    });
    expect([c.project, c.installationId, c.echoUrl]).toEqual(['p1', 'prod', 'http://127.0.0.1:1/']);
  });
});
