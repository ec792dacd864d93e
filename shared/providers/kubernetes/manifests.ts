/**
 * The Pod and Secret of one proxy instance (tinyproxy, and stunnel beside it as its TLS listener),
 * the ownership labels that find them again, and the NetworkPolicy that fences the proxies' egress.
 */
import type { V1NetworkPolicy, V1Pod, V1Secret } from '@kubernetes/client-node';
import { connectPortLines, networkPolicyEgress, type EgressPolicy } from '../../config/egress-policy.js';
import type { InstanceSpec } from '../contract.js';
import { certificateArgs, guestTlsPort, stunnelConfig } from '../stunnel.js';
import { basicAuthDirective } from '../tinyproxy.js';
import type { KubernetesOptions } from './options.js';
import { podTolerations, type KubernetesPlacement } from './placement.js';

/** Ownership labels. `managed-by` and the installation id are what GC and `list` select on. */
export const LABELS = {
  name: 'app.kubernetes.io/name',
  managedBy: 'app.kubernetes.io/managed-by',
  installation: 'egress.dev/installation',
  provider: 'egress.dev/provider',
  proxy: 'egress.dev/proxy',
  specHash: 'egress.dev/spec-hash',
} as const;

export const MANAGED_BY = 'egress';
/** The container, its port and the volume, by name (the observer reads the port back from the Pod). */
export const CONTAINER = 'proxy';
const VOLUME = 'proxy-config';
const CONFIG_DIR = '/etc/egress-proxy';
export const CONFIG_KEY = 'tinyproxy.conf';
/** The TLS listener's container and port name (the observer reads the TLS port back from the Pod). */
export const TLS_CONTAINER = 'tls';
/** The init container that makes the Pod's certificate. */
export const CERTIFICATE_CONTAINER = 'tls-certificate';
export const STUNNEL_KEY = 'stunnel.conf';
/** The Pod's certificate and key: an emptyDir in memory, made in the Pod, never leaving it. */
const TLS_VOLUME = 'tls';
const TLS_DIR = '/run/egress-tls';
const TLS_CERT = `${TLS_DIR}/cert.pem`;
const TLS_KEY = `${TLS_DIR}/key.pem`;
/** `nobody`: the proxy needs no privileges (its port is above 1024). */
const RUN_AS = 65534;

/** The Secret holding an instance's proxy configuration (and so its credentials). */
export const secretName = (instance: string): string => `${instance}-proxy`;

/** What this provider's objects carry, and what `list` selects (an installation never sees another's). */
export function ownerSelector(installationId: string, provider: string): string {
  return `${LABELS.managedBy}=${MANAGED_BY},${LABELS.installation}=${installationId},${LABELS.provider}=${provider}`;
}

function labelsOf(spec: InstanceSpec, provider: string): Record<string, string> {
  return {
    [LABELS.name]: 'egress-proxy',
    [LABELS.managedBy]: MANAGED_BY,
    [LABELS.installation]: spec.installationId,
    [LABELS.provider]: provider,
    [LABELS.proxy]: spec.proxy,
    [LABELS.specHash]: spec.specHash,
  };
}

/**
 * tinyproxy's configuration in the Pod: `port` on every address (IPv4 and IPv6), credentials
 * required, CONNECT only to the policy's ports (the NetworkPolicy, {@link networkPolicyManifest},
 * covers plain requests).
 */
export function podTinyproxyConfig(
  port: number,
  credentials: InstanceSpec['credentials'],
  egress: EgressPolicy,
): string {
  return [
    `Port ${port}`,
    // No `Listen`: tinyproxy then binds every address of the Pod, IPv6-only clusters included.
    'Timeout 600',
    'MaxClients 256',
    'DisableViaHeader Yes',
    'LogLevel Warning',
    basicAuthDirective(credentials),
    ...connectPortLines(egress),
    '',
  ].join('\n');
}

/**
 * stunnel's configuration in the Pod: TLS on `tlsPort` (every IPv4 address of the Pod), forwarded
 * to tinyproxy over the Pod's loopback, with the certificate the init container made.
 */
export function podStunnelConfig(port: number): string {
  return stunnelConfig({
    accept: String(guestTlsPort(port)),
    connect: `127.0.0.1:${port}`,
    cert: TLS_CERT,
    key: TLS_KEY,
  });
}

/** The Secret the Pod mounts (tinyproxy's and stunnel's configuration). Its data never reaches a log line or a span. */
export function secretManifest(
  spec: InstanceSpec,
  provider: string,
  namespace: string,
  port: number,
  egress: EgressPolicy,
): V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: secretName(spec.name), namespace, labels: labelsOf(spec, provider) },
    type: 'Opaque',
    data: {
      [CONFIG_KEY]: Buffer.from(podTinyproxyConfig(port, spec.credentials, egress)).toString('base64'),
      [STUNNEL_KEY]: Buffer.from(podStunnelConfig(port)).toString('base64'),
    },
  };
}

/** What every container of the Pod runs with: no privilege, nothing written but its volumes. */
const CONTAINER_SECURITY = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ['ALL'] },
};

/**
 * The proxy Pod: tinyproxy reading its config from the mounted Secret, and its TLS listener beside
 * it: an init container makes the Pod's self-signed certificate into an in-memory emptyDir (once
 * per Pod: init containers run to completion before the app containers start, and again only when
 * the Pod is re-initialised, which the key's `test -s` keeps from making a second one while the
 * volume lives: https://kubernetes.io/docs/concepts/workloads/pods/init-containers/,
 * https://kubernetes.io/docs/concepts/storage/volumes/#emptydir), then stunnel runs as a second
 * app container (the sidecar pattern; a Pod is Ready only when every container is:
 * https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-conditions). TCP readiness
 * probes on both ports, the placement, and ownership labels. The Pod's NetworkPolicy
 * ({@link networkPolicyManifest}) selects the Pod, so it fences both containers' egress; stunnel
 * connects only to tinyproxy over the Pod's loopback.
 *
 * @throws PermanentError naming `spec.port` when the TLS port (`port + 1`) would not exist
 */
export function podManifest(
  spec: InstanceSpec,
  provider: string,
  placement: KubernetesPlacement,
  options: KubernetesOptions,
  port: number,
): V1Pod {
  const onHost = placement.hostNetwork === true || placement.hostPort === true;
  const tlsPort = guestTlsPort(port);
  const tolerations = podTolerations(placement.tolerations, options.notReadySeconds);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: spec.name,
      namespace: placement.namespace,
      labels: labelsOf(spec, provider),
      // A bare Pod blocks the cluster autoscaler's scale-down unless marked evictable; the
      // reconciler replaces an evicted proxy (https://github.com/kubernetes/autoscaler/blob/master/cluster-autoscaler/FAQ.md).
      annotations: { 'cluster-autoscaler.kubernetes.io/safe-to-evict': 'true' },
    },
    spec: {
      restartPolicy: 'Always',
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      terminationGracePeriodSeconds: options.terminationGracePeriodSeconds,
      // The `restricted` Pod Security level requires a seccomp profile (RuntimeDefault or Localhost):
      // https://kubernetes.io/docs/concepts/security/pod-security-standards/#restricted
      securityContext: {
        runAsNonRoot: true,
        runAsUser: RUN_AS,
        runAsGroup: RUN_AS,
        fsGroup: RUN_AS,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      ...(placement.hostNetwork ? { hostNetwork: true, dnsPolicy: 'ClusterFirstWithHostNet' } : {}),
      ...(placement.nodeSelector ? { nodeSelector: placement.nodeSelector } : {}),
      tolerations,
      initContainers: [
        {
          name: CERTIFICATE_CONTAINER,
          image: options.tlsImage,
          imagePullPolicy: 'IfNotPresent',
          command: [
            'sh',
            '-c',
            `test -s ${TLS_KEY} || (umask 077 && openssl ${certificateArgs(TLS_CERT, TLS_KEY).join(' ')} 2>/dev/null)`,
          ],
          resources: options.resources,
          securityContext: CONTAINER_SECURITY,
          volumeMounts: [{ name: TLS_VOLUME, mountPath: TLS_DIR }],
        },
      ],
      containers: [
        {
          name: CONTAINER,
          image: options.image,
          // Pulled once per node, not on every start (Docker Hub rate-limits anonymous pulls).
          imagePullPolicy: 'IfNotPresent',
          command: ['tinyproxy', '-d', '-c', `${CONFIG_DIR}/${CONFIG_KEY}`],
          ports: [{ name: CONTAINER, containerPort: port, protocol: 'TCP', ...(onHost ? { hostPort: port } : {}) }],
          readinessProbe: { tcpSocket: { port }, initialDelaySeconds: 1, periodSeconds: 5, failureThreshold: 3 },
          resources: options.resources,
          securityContext: CONTAINER_SECURITY,
          volumeMounts: [{ name: VOLUME, mountPath: CONFIG_DIR, readOnly: true }],
        },
        {
          name: TLS_CONTAINER,
          image: options.tlsImage,
          imagePullPolicy: 'IfNotPresent',
          command: ['stunnel', `${CONFIG_DIR}/${STUNNEL_KEY}`],
          ports: [
            { name: TLS_CONTAINER, containerPort: tlsPort, protocol: 'TCP', ...(onHost ? { hostPort: tlsPort } : {}) },
          ],
          readinessProbe: {
            tcpSocket: { port: tlsPort },
            initialDelaySeconds: 1,
            periodSeconds: 5,
            failureThreshold: 3,
          },
          resources: options.resources,
          securityContext: CONTAINER_SECURITY,
          volumeMounts: [
            { name: VOLUME, mountPath: CONFIG_DIR, readOnly: true },
            { name: TLS_VOLUME, mountPath: TLS_DIR, readOnly: true },
          ],
        },
      ],
      volumes: [
        { name: VOLUME, secret: { secretName: secretName(spec.name), defaultMode: 0o440 } },
        { name: TLS_VOLUME, emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } },
      ],
    },
  };
}

/** The NetworkPolicy's name (infra/kubernetes/network-policy.yaml). */
export const NETWORK_POLICY = 'egress-proxies-fence';

/**
 * The egress fence of every proxy Pod in a namespace: a NetworkPolicy selecting the Pods this
 * product creates, allowing DNS, the policy's exceptions and its ports everywhere but the denied
 * ranges. Enforced by the cluster's network plugin — one without NetworkPolicy support (flannel
 * alone, kubenet) accepts the object and enforces nothing.
 * https://kubernetes.io/docs/concepts/services-networking/network-policies/#prerequisites
 */
export function networkPolicyManifest(egress: EgressPolicy): V1NetworkPolicy {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: NETWORK_POLICY, labels: { [LABELS.managedBy]: MANAGED_BY } },
    spec: {
      podSelector: { matchLabels: { [LABELS.name]: 'egress-proxy', [LABELS.managedBy]: MANAGED_BY } },
      policyTypes: ['Egress'],
      egress: networkPolicyEgress(egress),
    },
  };
}
