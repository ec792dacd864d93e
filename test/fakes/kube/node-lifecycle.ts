/**
 * A lost node, as the control plane handles one: the DefaultTolerationSeconds admission plugin, the
 * node lifecycle controller marking the node's Pods not Ready, and taint-based eviction.
 * - DefaultTolerationSeconds adds `node.kubernetes.io/not-ready` and `…/unreachable` NoExecute
 *   tolerations (300 s) to a Pod that does not already tolerate them; a toleration with an empty
 *   key, operator Exists and no effect (a bare "tolerate everything") counts as tolerating them
 *   (https://kubernetes.io/docs/reference/access-authn-authz/admission-controllers/#defaulttolerationseconds).
 * - A node whose Ready condition is Unknown (no heartbeat: unreachable) gets the
 *   `node.kubernetes.io/unreachable:NoExecute` taint, one whose Ready is False (its kubelet reports
 *   NotReady) `node.kubernetes.io/not-ready:NoExecute`
 *   (k8s.io/api core/v1/well_known_taints.go: TaintNodeNotReady, TaintNodeUnreachable "corresponding
 *   to NodeReady status ConditionUnknown"; the taint-based-evictions section cited below lists both);
 *   either way its Pods' Ready condition goes False and their phase stays Running. The fake's
 *   kubelet then falls silent in both cases (a NotReady kubelet may in truth still confirm a
 *   deletion).
 * - Taint-based eviction deletes a Pod that does not tolerate the taint at once, one that does after
 *   the smallest `tolerationSeconds` of its matching tolerations, and never when none of them has one
 *   (https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/#taint-based-evictions).
 *   The deletion is graceful, and the lost kubelet never confirms it: the Pod stays Terminating
 *   until a delete with grace 0 (https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-termination-forced).
 * - In a fully disrupted zone the controller stops evicting (`evict: false` here) but still marks
 *   the Pods not Ready (https://kubernetes.io/docs/concepts/architecture/nodes/#rate-limits-on-eviction).
 */
import type { FakeNode } from './scheduling.js';
import type { Toleration } from './schemas.js';
import type { StoredPod } from './store.js';

export const NOT_READY = 'node.kubernetes.io/not-ready';
export const UNREACHABLE = 'node.kubernetes.io/unreachable';
const DEFAULT_SECONDS = 300;

const matchesNoExecute = (t: Toleration, key: string) =>
  (t.effect ?? '') !== '' && t.effect !== 'NoExecute'
    ? false
    : (t.operator ?? 'Equal') === 'Exists'
      ? !t.key || t.key === key
      : t.key === key;

/** DefaultTolerationSeconds: the Pod's tolerations with the two defaults it lacks added. */
export function withDefaultTolerations(tolerations: Toleration[] | undefined): Toleration[] {
  const list = [...(tolerations ?? [])];
  for (const key of [NOT_READY, UNREACHABLE]) {
    if (!list.some((t) => matchesNoExecute(t, key)))
      list.push({ key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: DEFAULT_SECONDS });
  }
  return list;
}

/** Seconds until taint-based eviction for the `key` NoExecute taint: 0 now, undefined never. */
export function evictionDelay(tolerations: Toleration[] | undefined, key: string): number | undefined {
  const matching = (tolerations ?? []).filter((t) => matchesNoExecute(t, key));
  if (matching.length === 0) return 0;
  const seconds = matching.flatMap((t) => (t.tolerationSeconds === undefined ? [] : [t.tolerationSeconds]));
  if (seconds.length === 0) return undefined;
  return Math.max(0, Math.min(...seconds));
}

export interface NodeLossDeps {
  nodes: FakeNode[];
  pods: () => StoredPod[];
  /** The kubelet goes silent for the Pod: process gone, Ready False, no confirmation of deletion. */
  lose: (pod: StoredPod) => void;
  /** A graceful delete through the API (what the eviction does). */
  deletePod: (pod: StoredPod) => void;
  /** Timers, so the fake's close can stop them. */
  later: (ms: number, fn: () => void) => void;
}

/**
 * The node is lost (`taint`: unreachable, or not-ready); its Pods go not Ready and, with `evict`,
 * are evicted on the taint's terms.
 */
export function loseNode(deps: NodeLossDeps, name: string, evict: boolean, taint = UNREACHABLE): void {
  const node = deps.nodes.find((n) => n.name === name);
  if (!node) throw new Error(`fake: no node ${name}`);
  node.taints.push({ key: taint, effect: 'NoSchedule' }, { key: taint, effect: 'NoExecute' });
  for (const pod of deps.pods().filter((p) => p.spec.nodeName === name)) {
    deps.lose(pod);
    const delay = evict ? evictionDelay(pod.spec.tolerations, taint) : undefined;
    if (delay !== undefined) deps.later(delay * 1000, () => deps.deletePod(pod));
  }
}
