/** infra/kubernetes/network-policy.yaml is the rendering of the default egress policy, byte for meaning. */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DEFAULT_EGRESS_POLICY, egressPolicySchema } from '../../config/egress-policy.js';
import { LABELS, MANAGED_BY, networkPolicyManifest } from './manifests.js';

const root = resolve(import.meta.dirname, '..', '..', '..');

describe('the proxy Pods\u2019 NetworkPolicy', () => {
  it('infra/kubernetes/network-policy.yaml equals the default policy rendered', () => {
    const file: unknown = parse(readFileSync(join(root, 'infra', 'kubernetes', 'network-policy.yaml'), 'utf8'));
    expect(file).toEqual(networkPolicyManifest(DEFAULT_EGRESS_POLICY));
  });

  it('selects the Pods the provider creates, and limits their egress only', () => {
    const policy = networkPolicyManifest(egressPolicySchema.parse({ ports: [443] }));
    expect(policy.spec?.podSelector?.matchLabels).toEqual({
      [LABELS.name]: 'egress-proxy',
      [LABELS.managedBy]: MANAGED_BY,
    });
    expect(policy.spec?.policyTypes).toEqual(['Egress']);
    expect(policy.spec?.egress?.at(-1)?.ports).toEqual([{ protocol: 'TCP', port: 443 }]);
  });
});
