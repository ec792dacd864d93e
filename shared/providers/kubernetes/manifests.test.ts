/** The Pod and Secret of an instance: tinyproxy's config, ownership labels, probe, placement, no open proxy. */
import { DEFAULT_EGRESS_POLICY } from '../../config/egress-policy.js';
import { describe, expect, it } from 'vitest';
import type { InstanceSpec } from '../contract.js';
import {
  networkPolicyManifest,
  ownerSelector,
  podManifest,
  podStunnelConfig,
  secretManifest,
  podTinyproxyConfig,
} from './manifests.js';
import { parseKubernetesOptions } from './options.js';

const options = parseKubernetesOptions(
  { server: 'https://k', token: 't', allowUnpinnedImage: true },
  'config.providers.0',
);
const spec: InstanceSpec = {
  name: 'ep-p1-12345678',
  proxy: 'p1',
  installationId: 'it',
  specHash: 'h1',
  port: 0,
  placement: {},
  credentials: { username: 'u-p1', password: 'Zm9vYmFy-_x' },
};

describe('manifests', () => {
  it('tinyproxy listens on the port and requires the proxy’s credentials', () => {
    expect(podTinyproxyConfig(3128, spec.credentials, DEFAULT_EGRESS_POLICY)).toMatch(
      /^Port 3128\n[\s\S]*\nBasicAuth u-p1 Zm9vYmFy-_x\nConnectPort 80\nConnectPort 443\n$/,
    );
  });

  it.each([['with space'], ['quote"'], ['hash#'], ['']])(
    'refuses a credential that is not one token (%j)',
    (password) => {
      expect(() => podTinyproxyConfig(8888, { username: 'u', password }, DEFAULT_EGRESS_POLICY)).toThrow(
        expect.objectContaining({ code: 'Permanent', field: 'credentials.password' }),
      );
    },
  );

  it('the Secret carries the config base64-encoded and the ownership labels', () => {
    const secret = secretManifest(spec, 'k8s', 'egress', 8888, DEFAULT_EGRESS_POLICY);
    expect(secret.metadata).toMatchObject({ name: 'ep-p1-12345678-proxy', namespace: 'egress' });
    expect(Buffer.from(secret.data?.['tinyproxy.conf'] ?? '', 'base64').toString()).toContain('BasicAuth u-p1 ');
    expect(secret.metadata?.labels).toMatchObject({ 'egress.dev/installation': 'it', 'egress.dev/provider': 'k8s' });
  });

  it('the Pod: labels, image, readiness probe on the proxy port, the Secret mounted, placement applied', () => {
    const pod = podManifest(
      spec,
      'k8s',
      { namespace: 'egress', nodeSelector: { pool: 'egress' }, tolerations: ['dedicated=egress:NoSchedule'] },
      options,
      8888,
    );
    expect(pod.metadata?.labels).toEqual({
      'app.kubernetes.io/name': 'egress-proxy',
      'app.kubernetes.io/managed-by': 'egress',
      'egress.dev/installation': 'it',
      'egress.dev/provider': 'k8s',
      'egress.dev/proxy': 'p1',
      'egress.dev/spec-hash': 'h1',
    });
    const container = pod.spec?.containers[0];
    expect(container?.image).toBe(options.image);
    expect(container?.readinessProbe?.tcpSocket?.port).toBe(8888);
    expect(container?.ports).toEqual([{ name: 'proxy', containerPort: 8888, protocol: 'TCP' }]);
    expect(pod.spec?.volumes?.[0]?.secret?.secretName).toBe('ep-p1-12345678-proxy');
    expect(pod.spec?.nodeSelector).toEqual({ pool: 'egress' });
    expect(pod.spec?.tolerations).toEqual([
      { key: 'dedicated', operator: 'Equal', value: 'egress', effect: 'NoSchedule' },
      // A lost node's Pod is evicted after notReadySeconds (taint-based eviction).
      { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 120 },
      { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 120 },
    ]);
    expect(pod.spec?.automountServiceAccountToken).toBe(false);
    expect(pod.spec?.hostNetwork).toBeUndefined();
  });

  it('"*" tolerates every taint, but NoExecute only for notReadySeconds (else a lost node keeps the Pod for ever)', () => {
    const pod = podManifest(spec, 'k8s', { namespace: 'egress', tolerations: ['*'] }, options, 3128);
    const tolerations = pod.spec?.tolerations ?? [];
    expect(tolerations).not.toContainEqual({ operator: 'Exists' });
    expect(tolerations.filter((t) => t.effect === 'NoExecute').every((t) => t.tolerationSeconds === 120)).toBe(true);
    expect(tolerations).toContainEqual({ operator: 'Exists', effect: 'NoSchedule' });
  });

  it('hostNetwork publishes the port and the TLS port on the node and resolves cluster DNS', () => {
    const pod = podManifest(spec, 'k8s', { namespace: 'egress', hostNetwork: true }, options, 3128);
    expect(pod.spec).toMatchObject({ hostNetwork: true, dnsPolicy: 'ClusterFirstWithHostNet' });
    expect(pod.spec?.containers[0]?.ports?.[0]).toMatchObject({ containerPort: 3128, hostPort: 3128 });
    expect(pod.spec?.containers[1]?.ports?.[0]).toMatchObject({ name: 'tls', containerPort: 3129, hostPort: 3129 });
  });

  it('the TLS listener: the certificate made in the Pod by an init container, stunnel beside tinyproxy on the next port', () => {
    const pod = podManifest(spec, 'k8s', { namespace: 'egress' }, options, 8888);
    const [init] = pod.spec?.initContainers ?? [];
    const tls = pod.spec?.containers[1];
    // The key is made once, owner-only, in an in-memory emptyDir no other Pod sees.
    expect(init?.image).toBe(options.tlsImage);
    expect(init?.command?.join(' ')).toMatch(
      /^sh -c test -s \/run\/egress-tls\/key.pem \|\| \(umask 077 && openssl req -x509 .*-keyout \/run\/egress-tls\/key.pem -out \/run\/egress-tls\/cert.pem/,
    );
    expect(pod.spec?.volumes?.find((v) => v.name === 'tls')).toEqual({
      name: 'tls',
      emptyDir: { medium: 'Memory', sizeLimit: '1Mi' },
    });
    expect(tls).toMatchObject({
      name: 'tls',
      image: options.tlsImage,
      command: ['stunnel', '/etc/egress-proxy/stunnel.conf'],
      ports: [{ name: 'tls', containerPort: 8889, protocol: 'TCP' }],
      readinessProbe: { tcpSocket: { port: 8889 } },
      securityContext: {
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      },
    });
    expect(tls?.volumeMounts).toEqual([
      { name: 'proxy-config', mountPath: '/etc/egress-proxy', readOnly: true },
      { name: 'tls', mountPath: '/run/egress-tls', readOnly: true },
    ]);
    // stunnel forwards to tinyproxy over the Pod's loopback only.
    expect(podStunnelConfig(8888)).toMatch(
      /^accept = 8889\nconnect = 127\.0\.0\.1:8888\ncert = \/run\/egress-tls\/cert\.pem\nkey = \/run\/egress-tls\/key\.pem$/m,
    );
    const secret = secretManifest(spec, 'k8s', 'egress', 8888, DEFAULT_EGRESS_POLICY);
    expect(Buffer.from(secret.data?.['stunnel.conf'] ?? '', 'base64').toString()).toBe(podStunnelConfig(8888));
  });

  it('the egress fence still selects the Pod: both containers share its network and its NetworkPolicy', () => {
    const pod = podManifest(spec, 'k8s', { namespace: 'egress' }, options, 8888);
    const selector = networkPolicyManifest(DEFAULT_EGRESS_POLICY).spec?.podSelector?.matchLabels ?? {};
    expect(pod.metadata?.labels).toMatchObject(selector);
  });

  it('refuses port 65535: its TLS listener would have no next port', () => {
    expect(() => podManifest(spec, 'k8s', { namespace: 'egress' }, options, 65535)).toThrow(
      expect.objectContaining({ code: 'Permanent', field: 'spec.port' }),
    );
  });

  it('the list selector includes the installation id and the provider', () => {
    expect(ownerSelector('it', 'k8s')).toBe(
      'app.kubernetes.io/managed-by=egress,egress.dev/installation=it,egress.dev/provider=k8s',
    );
  });
});

describe('manifests: Pod Security', () => {
  it('the Pod sets seccompProfile RuntimeDefault, as the restricted level requires', () => {
    const pod = podManifest(spec, 'k8s', { namespace: 'default' }, options, 8888);
    expect(pod.spec?.securityContext?.seccompProfile).toEqual({ type: 'RuntimeDefault' });
  });
});

describe('manifests: on a real cluster', () => {
  const pod = podManifest(spec, 'k8s', { namespace: 'default' }, options, 8888);
  const container = pod.spec?.containers[0];

  it('the image is pulled if not present, and the root filesystem is read-only', () => {
    expect(container?.imagePullPolicy).toBe('IfNotPresent');
    expect(container?.securityContext?.readOnlyRootFilesystem).toBe(true);
  });

  it('the cluster autoscaler may evict the Pod (the reconciler replaces it)', () => {
    expect(pod.metadata?.annotations).toEqual({ 'cluster-autoscaler.kubernetes.io/safe-to-evict': 'true' });
  });

  it('tinyproxy binds no single address family (no Listen 0.0.0.0: IPv6-only clusters)', () => {
    expect(podTinyproxyConfig(8888, spec.credentials, DEFAULT_EGRESS_POLICY)).not.toMatch(/^Listen /m);
  });
});
