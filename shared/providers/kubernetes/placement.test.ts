/** Kubernetes placement: known keys, defaults, tolerations syntax, and errors naming `spec.placement.<key>`. */
import { describe, expect, it } from 'vitest';
import type { KubernetesPlacementBounds } from './placement.js';
import { parseToleration, resolveKubernetesPlacement } from './placement.js';

const NS = ['egress', 'egress-b'];
/** What the cases below ask for, allowed. */
const ALLOWED: KubernetesPlacementBounds = {
  allowHostNetwork: true,
  tolerations: ['dedicated=egress:NoSchedule', '*'],
  nodeSelectors: { pool: ['egress'] },
};
const NOTHING: KubernetesPlacementBounds = { allowHostNetwork: false, tolerations: [], nodeSelectors: {} };

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
    expect(resolveKubernetesPlacement(placement, NS, ALLOWED)).toEqual(resolved);
    // Deterministic, and its own output resolves to itself (create resolves again).
    expect(resolveKubernetesPlacement(resolveKubernetesPlacement(placement, NS, ALLOWED), NS, ALLOWED)).toEqual(
      resolved,
    );
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
    expect(() => resolveKubernetesPlacement(placement, NS, ALLOWED)).toThrow(
      expect.objectContaining({ code: 'Validation', field: `spec.placement.${key}` }),
    );
  });

  it.each([
    [{ hostNetwork: true }, NOTHING, 'hostNetwork', /allowHostNetwork/],
    [
      { tolerations: ['*'] },
      NOTHING,
      'tolerations',
      /"\*" is not in .*options\.placement\.tolerations \(allowed: none\)/,
    ],
    [{ tolerations: ['*'] }, { ...NOTHING, tolerations: ['dedicated=egress:NoSchedule'] }, 'tolerations', /"\*"/],
    [
      { tolerations: ['dedicated'] },
      { ...NOTHING, tolerations: ['dedicated=egress:NoSchedule'] },
      'tolerations',
      /"dedicated"/,
    ],
    [{ nodeSelector: { pool: 'egress' } }, NOTHING, 'nodeSelector', /pool=egress is not in/],
    [{ nodeSelector: { pool: 'gpu' } }, ALLOWED, 'nodeSelector', /allowed: pool=egress/],
    [{ nodeSelector: { pool: 'egress', zone: 'a' } }, ALLOWED, 'nodeSelector', /zone=a/],
  ])('%j beyond the provider’s bounds %j is refused naming spec.placement.%s', (placement, bounds, key, reason) => {
    expect(() => resolveKubernetesPlacement(placement, NS, bounds)).toThrow(
      expect.objectContaining({ code: 'Validation', field: `spec.placement.${key}` }),
    );
    expect(() => resolveKubernetesPlacement(placement, NS, bounds)).toThrow(reason);
  });

  it('within the bounds, the same placement resolves; hostPort keeps the Pod in its own network namespace and needs no bound', () => {
    expect(resolveKubernetesPlacement({ hostPort: true, namespace: 'egress-b' }, NS, NOTHING)).toEqual({
      namespace: 'egress-b',
      hostPort: true,
    });
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
