import { describe, expect, it } from 'vitest';
import { claimId, parseStaticOptions, parseStaticPlacement } from './options.js';

const endpoints = [
  { host: 'gw.vendor.example', port: 8000, username: 'user-session-1', password: 'x', country: 'DE', labels: {} },
  {
    host: 'gw.vendor.example',
    port: 8000,
    username: 'user-session-2',
    password: 'x',
    country: 'FR',
    labels: { k: 'v' },
  },
];

describe('static provider options', () => {
  it('one vendor host:port with per-session usernames is several endpoints, each with its own claim id', () => {
    const options = parseStaticOptions({ endpoints }, 'config.providers.0');
    expect(options.endpoints).toHaveLength(2);
    expect(options.releaseCooldownSeconds).toBe(600);
    expect(claimId('v', endpoints[0]!)).not.toBe(claimId('v', endpoints[1]!));
    expect(claimId('v', endpoints[0]!)).toMatch(/^v~[0-9a-f]{24}$/);
  });

  it.each([
    [{}, 'config.providers.0.options.endpoints'],
    [{ endpoints: [{ host: 'h', port: 0 }] }, 'config.providers.0.options.endpoints.0.port'],
    [{ endpoints: [{ host: 'h', port: 1, country: 'de' }] }, 'config.providers.0.options.endpoints.0.country'],
    [{ endpoints: [endpoints[0], endpoints[0]] }, 'config.providers.0.options.endpoints.1'],
    [{ endpoints, releaseCooldownSeconds: -1 }, 'config.providers.0.options.releaseCooldownSeconds'],
  ])('refuses %j naming %s', (options, field) => {
    expect(() => parseStaticOptions(options as Record<string, unknown>, 'config.providers.0')).toThrow(
      expect.objectContaining({ field }),
    );
  });

  it('a placement selects by country and labels, names an unknown key, and must match an endpoint', () => {
    const list = parseStaticOptions({ endpoints }, 'p').endpoints;
    expect(parseStaticPlacement({ country: 'FR', labels: { k: 'v' } }, list)).toEqual({
      country: 'FR',
      labels: { k: 'v' },
    });
    expect(() => parseStaticPlacement({ zone: 'a' }, list)).toThrow(
      expect.objectContaining({ field: 'spec.placement.zone' }),
    );
    expect(() => parseStaticPlacement({ country: 'Germany' }, list)).toThrow(
      expect.objectContaining({ field: 'spec.placement.country' }),
    );
    expect(() => parseStaticPlacement({ country: 'DE', labels: { k: 'v' } }, list)).toThrow(
      expect.objectContaining({ field: 'spec.placement' }),
    );
  });
});
