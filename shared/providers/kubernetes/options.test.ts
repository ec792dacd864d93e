/** Provider options: defaults, errors naming `config.providers.N.options.<key>`, and the config sample. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { parseConfig } from '../../config/load.js';
import { ValidationError } from '../../errors.js';
import { createLogger } from '../../logger.js';
import { createKubernetesProvider } from './index.js';
import { DEFAULT_IMAGE, DEFAULT_TLS_IMAGE, managedNamespaces, parseKubernetesOptions } from './options.js';
import { resolveKubernetesPlacement } from './placement.js';

const PATH = 'config.providers.3';
const access = { server: 'https://10.0.0.1', token: 't', allowUnpinnedImage: true };
const DIGEST = `docker.io/vimagick/tinyproxy@sha256:${'0123456789abcdef'.repeat(4)}`;
const TLS_DIGEST = `docker.io/dweomer/stunnel@sha256:${'fedcba9876543210'.repeat(4)}`;

/** What parsing `options` threw, or undefined when it parsed. */
function refusalOf(options: Record<string, unknown>): unknown {
  try {
    parseKubernetesOptions(options, PATH);
    return undefined;
  } catch (err) {
    return err;
  }
}

describe('kubernetes options', () => {
  it('applies defaults: namespace default, tinyproxy image, port 8888, small resources', () => {
    const o = parseKubernetesOptions(access, PATH);
    expect(o).toMatchObject({
      namespace: 'default',
      image: DEFAULT_IMAGE,
      tlsImage: DEFAULT_TLS_IMAGE,
      port: 8888,
      requestTimeoutSeconds: 10,
    });
    expect(o.resources.limits).toEqual({ cpu: '500m', memory: '64Mi' });
    expect(managedNamespaces({ ...o, namespaces: ['b', 'default'] })).toEqual(['default', 'b']);
  });

  it('refuses an image or TLS image by tag unless allowUnpinnedImage says this is development, naming it', () => {
    const production = { server: 'https://10.0.0.1', token: 't' };
    const refusals: [Record<string, unknown>, string][] = [
      [production, 'image'],
      [{ ...production, image: 'docker.io/vimagick/tinyproxy:1.11', tlsImage: TLS_DIGEST }, 'image'],
      [{ ...production, image: DIGEST }, 'tlsImage'],
      [{ ...production, image: DIGEST, tlsImage: 'docker.io/dweomer/stunnel:latest' }, 'tlsImage'],
    ];
    for (const [options, field] of refusals) {
      const error = refusalOf(options);
      expect(error).toBeInstanceOf(ValidationError);
      expect(error).toMatchObject({ field: `${PATH}.options.${field}` });
      expect(String(error)).toMatch(/pinned by digest/);
    }
    expect(parseKubernetesOptions({ ...production, image: DIGEST, tlsImage: TLS_DIGEST }, PATH)).toMatchObject({
      image: DIGEST,
      tlsImage: TLS_DIGEST,
    });
    expect(parseKubernetesOptions({ ...production, allowUnpinnedImage: true }, PATH)).toMatchObject({
      image: DEFAULT_IMAGE,
      tlsImage: DEFAULT_TLS_IMAGE,
    });
  });

  it.each([DIGEST, `registry.example:5000/egress/tinyproxy:1.11@sha256:${'0123456789abcdef'.repeat(4)}`])(
    'accepts an image pinned by digest (%s)',
    (image) => {
      expect(parseKubernetesOptions({ ...access, image }, PATH).image).toBe(image);
    },
  );

  it.each([
    [{}, 'kubeconfig', /exactly one way/],
    [{ ...access, inCluster: true }, 'kubeconfig', /exactly one way/],
    [{ server: 'https://x' }, 'token', /bearer token/],
    [{ inCluster: true, context: 'prod' }, 'context', /kubeconfig/],
    [{ ...access, namespace: 'Not_Valid' }, 'namespace', /DNS-1123/],
    [{ ...access, port: 70000 }, 'port', /./],
    [{ ...access, image: 'docker.io/vimagick/tinyproxy@sha256:abc' }, 'image', /64 lowercase hex/],
    [{ ...access, image: `@sha256:${'ab'.repeat(32)}` }, 'image', /name@sha256/],
    [{ ...access, image: `a@b@sha256:${'ab'.repeat(32)}` }, 'image', /name@sha256/],
    [{ ...access, image: `tinyproxy@sha256:${'AB'.repeat(32)}` }, 'image', /lowercase/],
    [{ ...access, resources: { limits: { cpu: 'lots' } } }, 'resources.limits.cpu', /quantity/],
    [{ ...access, zone: 'x' }, 'zone', /unknown option/],
    [{ gke: { server: 'ftp://x' } }, 'gke.server', /./],
  ])('%j is refused naming its field (%s)', (options, key, reason) => {
    const error = refusalOf(options);
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toHaveProperty('field', `${PATH}.options.${key}`);
    expect(String(error)).toMatch(reason);
  });

  it('the registry refuses a provider whose options are invalid, naming the field', () => {
    expect(() =>
      createKubernetesProvider({
        provider: { name: 'k', type: 'kubernetes', catalogue: {}, options: { server: 'https://x' }, rolloutBudget: 2 },
        path: PATH,
        config: { installationId: 'it' },
        logger: createLogger({ write: () => undefined }),
      }),
    ).toThrow(`${PATH}.options.token`);
  });

  it('placement bounds: nothing allowed by default; tolerations and selectors refused when malformed', () => {
    expect(parseKubernetesOptions(access, PATH).placement).toEqual({
      allowHostNetwork: false,
      tolerations: [],
      nodeSelectors: {},
    });
    const fieldOf = (placement: unknown) => {
      try {
        parseKubernetesOptions({ ...access, placement }, PATH);
      } catch (err) {
        if (err instanceof ValidationError) return err.field;
        throw err;
      }
      return undefined;
    };
    expect(fieldOf({ tolerations: ['a=b:Sometimes'] })).toBe(`${PATH}.options.placement.tolerations.0`);
    expect(fieldOf({ nodeSelectors: { pool: ['not a value'] } })).toBe(
      `${PATH}.options.placement.nodeSelectors.pool.0`,
    );
    expect(fieldOf({ hostNetwork: true })).toBe(`${PATH}.options.placement.hostNetwork`);
  });

  it('the config sample is a valid config whose catalogue entries are valid placements', () => {
    const config = parseConfig(parseYaml(readFileSync('docs/samples/config/kubernetes.yaml', 'utf8')));
    const providers = config.providers.filter((p) => p.type === 'kubernetes');
    expect(providers.length).toBeGreaterThan(0);
    providers.forEach((p, i) => {
      const options = parseKubernetesOptions(p.options, `config.providers.${i}`);
      for (const entry of Object.values(p.catalogue))
        expect(resolveKubernetesPlacement(entry, managedNamespaces(options), options.placement).namespace).toBe(
          options.namespace,
        );
    });
  });
});
