/** From a Pod as the API returns it (validated, never cast) to an `Instance`: state, IP, ports, createdAt. */
import { z } from 'zod';
import type { ErrorInfo } from '../../errors.js';
import type { Instance, InstanceState } from '../contract.js';
import { CONTAINER, LABELS, MANAGED_BY, TLS_CONTAINER } from './manifests.js';

/** The SDK turns timestamps into Dates; a raw response has strings. */
const timestamp = z.union([z.date(), z.string()]).transform((t) => (t instanceof Date ? t.getTime() : Date.parse(t)));
const absent = <T extends z.ZodType>(schema: T) => schema.nullish().transform((v) => v ?? undefined);

const containerState = z.object({
  waiting: absent(z.object({ reason: absent(z.string()), message: absent(z.string()) })),
  terminated: absent(z.object({ reason: absent(z.string()), exitCode: absent(z.number()) })),
});

/** The parts of a Pod this provider reads. */
export const podSchema = z.object({
  metadata: z.object({
    name: z.string(),
    namespace: absent(z.string()),
    uid: absent(z.string()),
    labels: absent(z.record(z.string(), z.string())),
    creationTimestamp: timestamp,
    deletionTimestamp: absent(timestamp),
  }),
  spec: absent(
    z.object({
      hostNetwork: absent(z.boolean()),
      containers: z.array(
        z.object({
          name: z.string(),
          ports: absent(
            z.array(z.object({ name: absent(z.string()), containerPort: z.number(), hostPort: absent(z.number()) })),
          ),
        }),
      ),
    }),
  ),
  status: absent(
    z.object({
      phase: absent(z.string()),
      podIP: absent(z.string()),
      hostIP: absent(z.string()),
      conditions: absent(
        z.array(
          z.object({
            type: z.string(),
            status: z.string(),
            reason: absent(z.string()),
            message: absent(z.string()),
            lastTransitionTime: absent(timestamp),
          }),
        ),
      ),
      containerStatuses: absent(z.array(z.object({ name: z.string(), state: absent(containerState) }))),
    }),
  ),
});
export type PodView = z.infer<typeof podSchema>;

/** Container waiting reasons that mean the Pod will not start by itself. */
const STUCK_WAITING = new Set([
  // Not ErrImagePull: the kubelet's first failed pull, often a registry blip; a repeated failure
  // is ImagePullBackOff (https://kubernetes.io/docs/concepts/containers/images/#imagepullbackoff).
  'ImagePullBackOff',
  'InvalidImageName',
  'CreateContainerConfigError',
  'CreateContainerError',
  'CrashLoopBackOff',
]);

/** Who owns a Pod, from its labels; undefined when it does not carry this project's labels. */
export function ownerOf(pod: PodView): { installationId: string; provider: string; proxy: string } | undefined {
  const l = pod.metadata.labels ?? {};
  const installationId = l[LABELS.installation];
  const provider = l[LABELS.provider];
  const proxy = l[LABELS.proxy];
  if (l[LABELS.managedBy] !== MANAGED_BY || !installationId || !provider || !proxy) return undefined;
  return { installationId, provider, proxy };
}

/**
 * Maps a Pod to an Instance:
 * a set `deletionTimestamp` → `Terminated` (still present until the object is gone);
 * `Pending` → `Pending`, or `Failed` when it cannot be scheduled (quota) or its container cannot
 * start; `Running` + condition Ready → `Running`, not ready → `Pending` (or `Failed` when crash
 * looping); `Succeeded`/`Failed` → `Terminated`; `Unknown` (node lost) → `Stopped`.
 *
 * @param imageField - the config field that names the image (for an invalid image name)
 * A Pod Running but not Ready for `notReadyMs` since its Ready condition turned False (a lost node
 * whose Pods the cluster does not evict, a hung proxy) is `Stopped`: the reconciler replaces it.
 *
 * @param unschedulable - how long Unschedulable stays Pending, how long Running may stay not Ready, and the time now
 */
export function podToInstance(
  pod: PodView,
  imageField: string,
  unschedulable: Clock = { graceMs: 0, now: Date.now() },
): Instance {
  const labels = pod.metadata.labels ?? {};
  const status = pod.status;
  const container = pod.spec?.containers.find((c) => c.name === CONTAINER) ?? pod.spec?.containers[0];
  const port = container?.ports?.find((p) => p.name === CONTAINER) ?? container?.ports?.[0];
  const onHost = pod.spec?.hostNetwork === true || port?.hostPort !== undefined;
  const tls = pod.spec?.containers.find((c) => c.name === TLS_CONTAINER)?.ports?.find((p) => p.name === TLS_CONTAINER);
  const tlsPort = tls?.hostPort ?? tls?.containerPort;
  const instance: Instance = {
    name: pod.metadata.name,
    proxy: labels[LABELS.proxy] ?? '',
    installationId: labels[LABELS.installation] ?? '',
    specHash: labels[LABELS.specHash] ?? '',
    state: 'Pending',
    ip: (onHost ? status?.hostIP : status?.podIP) ?? '',
    port: port?.hostPort ?? port?.containerPort ?? 0,
    // The TLS listener's port, from its sidecar (a Pod made before it had one reports none).
    ...(tlsPort !== undefined && { tlsPort }),
    createdAt: pod.metadata.creationTimestamp,
  };
  const { state, error } = stateOf(pod, imageField, unschedulable);
  instance.state = state;
  if (error) instance.error = error;
  return instance;
}

/** Grace periods (ms) and the time now. */
export type Clock = { graceMs: number; notReadyMs?: number; now: number };

function stateOf(pod: PodView, imageField: string, unschedulable: Clock): { state: InstanceState; error?: ErrorInfo } {
  if (pod.metadata.deletionTimestamp !== undefined) return { state: 'Terminated' };
  const status = pod.status;
  const condition = (type: string) => status?.conditions?.find((c) => c.type === type);
  const waiting = status?.containerStatuses
    ?.map((c) => c.state?.waiting)
    .find((w) => w?.reason && STUCK_WAITING.has(w.reason));
  const stuck = (): { state: InstanceState; error: ErrorInfo } | undefined => {
    if (!waiting?.reason) return undefined;
    const message = `proxy container cannot start: ${waiting.reason}${waiting.message ? ` (${waiting.message})` : ''}`;
    if (waiting.reason === 'InvalidImageName')
      return { state: 'Failed', error: { code: 'Permanent', message: `${imageField}: ${message}`, field: imageField } };
    return { state: 'Failed', error: { code: 'Retryable', message } };
  };
  switch (status?.phase) {
    case 'Running': {
      const ready = condition('Ready');
      if (ready?.status === 'True') return { state: 'Running' };
      const since = ready?.lastTransitionTime ?? Number.NaN;
      const limit = unschedulable.notReadyMs ?? Number.POSITIVE_INFINITY;
      if (ready?.status === 'False' && unschedulable.now - since >= limit) return { state: 'Stopped' };
      return stuck() ?? { state: 'Pending' };
    }
    case 'Succeeded':
    case 'Failed':
      return { state: 'Terminated' };
    case 'Unknown':
      return { state: 'Stopped' };
    default: {
      const scheduled = condition('PodScheduled');
      if (scheduled?.status === 'False' && scheduled.reason === 'Unschedulable') {
        const since = scheduled.lastTransitionTime ?? Number.NaN;
        if (Number.isFinite(since) && unschedulable.now - since < unschedulable.graceMs) return { state: 'Pending' };
        return { state: 'Failed', error: unschedulableError(scheduled.message ?? 'Unschedulable') };
      }
      return stuck() ?? { state: 'Pending' };
    }
  }
}

/**
 * Why no node fits, from the scheduler's message ("0/3 nodes are available: 1 Insufficient cpu,
 * 2 node(s) didn't match Pod's node affinity/selector."): a node short of room or ports may free
 * up (QuotaExceeded); when none is short of room, the placement excludes every node (Permanent on
 * the tolerations when a taint kept a node out, else on the node selector).
 */
function unschedulableError(scheduler: string): ErrorInfo {
  const message = `no node can run the proxy Pod: ${scheduler}`;
  if (/Insufficient |free ports/.test(scheduler)) return { code: 'QuotaExceeded', message };
  // A taint names the nodes the selector did let through: tolerating it is the fix.
  const field = /untolerated taint/.test(scheduler)
    ? 'spec.placement.tolerations'
    : /node affinity\/selector/.test(scheduler)
      ? 'spec.placement.nodeSelector'
      : undefined;
  if (!field) return { code: 'QuotaExceeded', message };
  return { code: 'Permanent', message: `${field}: ${message}`, field };
}
