import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseConfig } from '../../config/load.js';
import { providerConfigSchema } from '../../config/schema.js';
import { createLogger } from '../../logger.js';
import { createGcpProvider } from './index.js';

describe('egress verify: the country a provider expects', () => {
  const config = parseConfig(parse(readFileSync('docs/samples/config/gcp.yaml', 'utf8')));
  const entry = config.providers.find((p) => p.type === 'gcp');
  if (!entry) throw new Error('no gcp provider in the sample config');
  const gcp = createGcpProvider({
    provider: entry,
    path: 'p',
    config: { installationId: 'i' },
    logger: createLogger(),
  });

  it.each([
    ['europe-west1-b', 'BE'],
    ['us-central1-a', 'US'],
    ['asia-northeast1-c', 'JP'],
    ['europe-west10-a', 'DE'],
    ['mars-north1-a', undefined],
  ])('gcp: zone %s is in %s', (zone, country) => {
    expect(gcp.expectedCountry?.({ zone })).toBe(country);
  });

  it('a gcp provider takes no configured country; others take an upper-case alpha-2 code', () => {
    const gcpWithCountry = providerConfigSchema.safeParse({ name: 'g', type: 'gcp', country: 'DE' });
    expect(gcpWithCountry.error?.issues[0]).toMatchObject({ path: ['country'] });
    const kvm = providerConfigSchema.safeParse({ name: 'lab', type: 'kvm', relay: 'r', country: 'de' });
    expect(kvm.error?.issues[0]?.path).toEqual(['country']);
    expect(kvm.error?.issues[0]?.message).toMatch(/ISO 3166-1/);
    expect(providerConfigSchema.parse({ name: 'lab', type: 'kvm', relay: 'r', country: 'DE' }).country).toBe('DE');
  });
});
