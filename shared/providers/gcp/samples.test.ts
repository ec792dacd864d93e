/** The gcp samples: the sample config builds a gcp provider, and every sample proxy's placement resolves on it. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseConfig } from '../../config/load.js';
import { parseProxyDocuments } from '../../domain/documents.js';
import { createLogger } from '../../logger.js';
import { resolvePlacement } from '../../reconcile/reconcile.js';
import { createGcpProvider } from './index.js';

describe('docs/samples gcp', () => {
  const config = parseConfig(parse(readFileSync('docs/samples/config/gcp.yaml', 'utf8')));
  const entry = config.providers.find((p) => p.type === 'gcp');

  it('the sample config has a gcp provider whose options parse', () => {
    expect(entry?.name).toBe('gce');
    if (!entry) return;
    expect(() =>
      createGcpProvider({
        provider: entry,
        path: 'config.providers.0',
        config: { installationId: 'prod' },
        logger: createLogger(),
      }),
    ).not.toThrow();
  });

  it('every proxy of docs/samples/gcp.yaml resolves its placement (catalogue included) on that provider', () => {
    if (!entry) throw new Error('no gcp provider in the sample config');
    const provider = createGcpProvider({
      provider: entry,
      path: 'config.providers.0',
      config: { installationId: 'prod' },
      logger: createLogger(),
    });
    const docs = parseProxyDocuments(readFileSync('docs/samples/gcp.yaml', 'utf8'));
    expect(docs.length).toBeGreaterThan(0);
    for (const doc of docs) {
      expect(doc.spec.provider).toBe(entry.name);
      const placement = resolvePlacement(config, provider, doc.spec.placement);
      expect(placement['image']).toMatch(/ubuntu-os-cloud/);
    }
    const spot = docs.find((d) => d.metadata.name === 'gce-eu-spot');
    expect(resolvePlacement(config, provider, spot?.spec.placement ?? {})).toMatchObject({
      zone: 'europe-west1-b',
      spot: true,
    });
  });
});
