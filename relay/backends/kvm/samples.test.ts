/** The kvm samples: the relay config builds a kvm backend, and every sample proxy's placement resolves on it. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseConfig } from '../../../shared/config/load.js';
import { parseProxyDocuments } from '../../../shared/domain/documents.js';
import { createLogger } from '../../../shared/logger.js';
import { resolvePlacement } from '../../../shared/reconcile/reconcile.js';
import type { Provider } from '../../../shared/providers/contract.js';
import { loadRelayConfig } from '../../config.js';
import { createBackends } from '../create-backends.js';

describe('docs/samples kvm', () => {
  const relayConfig = loadRelayConfig({ EGRESS_RELAY_CONFIG: 'docs/samples/config/relay/kvm.yaml' });
  const config = parseConfig(parse(readFileSync('docs/samples/config/kvm.yaml', 'utf8')));
  const entry = config.providers.find((p) => p.type === 'kvm');
  const backend = createBackends(relayConfig, { logger: createLogger({ write: () => {} }) }).get('lab');

  it('the relay config runs the provider the functions config names, on the relay it names', () => {
    expect(entry).toMatchObject({ name: 'lab', relay: relayConfig.relay });
    expect(backend?.type).toBe('kvm');
    expect(relayConfig.backends[0]).toMatchObject({ type: 'kvm', defaultPort: 3128 });
  });

  it('every proxy of docs/samples/kvm.yaml resolves its placement (catalogue included) on that backend', () => {
    if (!entry || !backend) throw new Error('no kvm provider in the samples');
    // The functions resolve the catalogue and pass the rest through; the relay's backend validates.
    const functionsSide: Provider = { ...backend, name: entry.name, resolvePlacement: (p) => p };
    const docs = parseProxyDocuments(readFileSync('docs/samples/kvm.yaml', 'utf8'));
    expect(docs.length).toBeGreaterThan(0);
    const resolved = docs.map((doc) => {
      expect(doc.spec.provider).toBe(entry.name);
      return backend.resolvePlacement(resolvePlacement(config, functionsSide, doc.spec.placement));
    });
    expect(resolved).toEqual([{ host: 'beelink' }, { host: 'nuc', size: 'large' }, { host: 'beelink', size: 'small' }]);
  });
});
