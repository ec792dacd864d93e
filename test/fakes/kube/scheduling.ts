/** The fake scheduler's filter: nodeSelector, taints and tolerations, and host ports already taken. */
import type { Toleration } from './schemas.js';
import type { StoredPod } from './store.js';

/** A node of the fake cluster; its IP is a loopback address (127/8 all routes to lo on Linux). */
export interface FakeNode {
  name: string;
  ip: string;
  labels: Record<string, string>;
  taints: { key: string; value?: string; effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute' }[];
}

function tolerates(tolerations: Toleration[], taint: FakeNode['taints'][number]): boolean {
  return tolerations.some((t) => {
    if (t.effect && t.effect !== taint.effect) return false;
    if ((t.operator ?? 'Equal') === 'Exists') return t.key === undefined || t.key === '' || t.key === taint.key;
    return t.key === taint.key && (t.value ?? '') === (taint.value ?? '');
  });
}

function hostPorts(pod: StoredPod): number[] {
  return (pod.spec.containers ?? []).flatMap((c) =>
    (c.ports ?? []).flatMap((p) => (p.hostPort ? [p.hostPort] : pod.spec.hostNetwork ? [p.containerPort] : [])),
  );
}

/**
 * Picks a node for the Pod the way kube-scheduler's filters would (no scoring: the first that fits).
 *
 * @param pods - every Pod in the cluster (for host ports in use)
 * @returns the node, or the reason in the scheduler's wording
 */
export function schedule(
  pod: StoredPod,
  nodes: FakeNode[],
  pods: StoredPod[],
): { node: FakeNode } | { unschedulable: string } {
  const reasons = new Map<string, number>();
  const note = (r: string) => reasons.set(r, (reasons.get(r) ?? 0) + 1);
  const wanted = hostPorts(pod);
  for (const node of nodes) {
    const selector = pod.spec.nodeSelector ?? {};
    if (!Object.entries(selector).every(([k, v]) => node.labels[k] === v)) {
      note("node(s) didn't match Pod's node affinity/selector");
      continue;
    }
    const blocking = node.taints.filter((t) => t.effect !== 'PreferNoSchedule');
    const untolerated = blocking.find((t) => !tolerates(pod.spec.tolerations ?? [], t));
    if (untolerated) {
      note(`node(s) had untolerated taint {${untolerated.key}: ${untolerated.value ?? ''}}`);
      continue;
    }
    const used = pods
      .filter(
        (p) =>
          p !== pod && p.spec.nodeName === node.name && p.status.phase !== 'Failed' && p.status.phase !== 'Succeeded',
      )
      .flatMap(hostPorts);
    if (wanted.some((port) => used.includes(port))) {
      note("node(s) didn't have free ports for the requested pod ports");
      continue;
    }
    return { node };
  }
  const detail = [...reasons.entries()].map(([r, n]) => `${n} ${r}`).join(', ');
  return { unschedulable: `0/${nodes.length} nodes are available: ${detail}.` };
}
