/** A Pod's status as the kubelet writes it: its conditions and its containers' statuses. */
import { stamp, type Condition, type ContainerStatus, type StoredPod } from './store.js';

/**
 * The Pod's conditions with `set` applied: a condition's `lastTransitionTime` moves only when its
 * status changes; `reason` and `message` go on the conditions set False.
 */
export function withConditions(
  pod: StoredPod,
  set: Partial<Record<Condition['type'], boolean>>,
  reason?: string,
  message?: string,
): Condition[] {
  const now = stamp();
  const byType = new Map(pod.status.conditions.map((c) => [c.type, c]));
  for (const [type, value] of Object.entries(set) as [Condition['type'], boolean][]) {
    const status = value ? 'True' : 'False';
    const prior = byType.get(type);
    byType.set(type, {
      type,
      status,
      ...(reason && !value ? { reason } : {}),
      ...(message && !value ? { message } : {}),
      lastTransitionTime: prior?.status === status ? prior.lastTransitionTime : now,
    });
  }
  return [...byType.values()];
}

/** The statuses of the Pod's app containers, not ready, in `state` (the fake runs them together). */
export function containerStatuses(
  pod: StoredPod,
  state: ContainerStatus['state'],
  restartCount: number,
): ContainerStatus[] {
  return pod.spec.containers.map((container) => ({
    name: container.name,
    image: container.image,
    ready: false,
    started: state.running !== undefined,
    restartCount,
    state,
  }));
}
