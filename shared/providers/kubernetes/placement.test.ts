/** Kubernetes placement: known keys, defaults, tolerations syntax, and errors naming `spec.placement.<key>`. */
import { describe, expect, it } from 'vitest';
import { parseToleration, resolveKubernetesPlacement } from './placement.js';

const NS = ['egress', 'egress-b'];

describe('resolveKubernetesPlacement', () => {
  it.each([
    [{}, { namespace: 'egress' }],
    [{ namespace: 'egress-b' }, { namespace: 'egress-b' }],
    [{ nodeSelector: { pool: 'egress' } }, { namespace: 'egress', nodeSelector: { pool: 'egress' } }],
    [{ nodeSelector: {}, tolerations: [] }, { namespace: 'egress' }],
    [
      { tolerations: ['dedicated=egress:NoSchedule', '*'] },
      { namespace: 'egress', tolerations: ['dedicated=egress:NoSchedule', '*'] },
    ],
    [
      { hostNetwork: true, hostPort: false },
      { namespace: 'egress', hostNetwork: true },
    ],
  ])('%j → %j', (placement, resolved) => {
    expect(resolveKubernetesPlacement(placement, NS)).toEqual(resolved);
    // Deterministic, and its own output resolves to itself (create resolves again).
    expect(resolveKubernetesPlacement(resolveKubernetesPlacement(placement, NS), NS)).toEqual(resolved);
  });

  it.each([
    [{ zone: 'europe-west1-b' }, 'zone'],
    [{ namespace: 'kube-system' }, 'namespace'],
    [{ namespace: 3 }, 'namespace'],
    [{ nodeSelector: 'pool=egress' }, 'nodeSelector'],
    [{ nodeSelector: { pool: 'not a value' } }, 'nodeSelector'],
    [{ tolerations: 'dedicated' }, 'tolerations'],
    [{ tolerations: ['dedicated:Sometimes'] }, 'tolerations'],
    [{ hostNetwork: 'yes' }, 'hostNetwork'],
    [{ hostPort: 1 }, 'hostPort'],
  ])('%j is refused naming spec.placement.%s', (placement, key) => {
    expect(() => resolveKubernetesPlacement(placement, NS)).toThrow(
      expect.objectContaining({ code: 'Validation', field: `spec.placement.${key}` }),
    );
  });
});

describe('parseToleration', () => {
  it.each([
    ['*', { operator: 'Exists' }],
    ['gpu', { key: 'gpu', operator: 'Exists' }],
    ['gpu:NoExecute', { key: 'gpu', operator: 'Exists', effect: 'NoExecute' }],
    ['dedicated=egress', { key: 'dedicated', operator: 'Equal', value: 'egress' }],
    [
      'example.com/pool=egress:PreferNoSchedule',
      { key: 'example.com/pool', operator: 'Equal', value: 'egress', effect: 'PreferNoSchedule' },
    ],
    ['a=b:Never', undefined],
    ['=b', undefined],
  ])('%s → %j', (text, toleration) => {
    expect(parseToleration(text)).toEqual(toleration);
  });
});
