// The import rules of `npm run lint`: layer boundaries (docs/architecture.md "Rooms"), sibling
// providers and relay backends kept apart, provider SDKs in their provider's folder, and import
// cycles, type-only imports included (eslint's `no-cycle` rules skip `import type` edges, and a
// type-only cycle is the kind this project has had: relay/libvirt/* <-> index.ts, a provider <->
// registry.ts). Paths are resolved files, so `shared/wire/` is never taken for the top-level `relay/`.

/** Top-level folders a layer must not import from. */
const LAYER_BANS = {
  shared: ['functions', 'relay', 'cli', 'infra', 'gateway'],
  functions: ['relay', 'cli'],
  // The relay runs on-prem beside its backends: it shares only shared/ with the functions.
  relay: ['functions', 'cli', 'infra', 'gateway'],
  // The CLI is a client of the HTTP API (and uses the gateway library), never of the back end's code.
  cli: ['functions', 'relay', 'infra'],
  // The gateway is a library beside the client: it talks to the API over HTTP, never to the back end's code.
  gateway: ['functions', 'relay', 'cli', 'infra'],
};

/** Provider SDKs and the only folders that may import them. */
const SDK_HOMES = {
  // The gcp provider, and doctor's preflight, which reads the project's networks, firewalls and quotas.
  '@google-cloud/compute': ['shared/providers/gcp', 'cli/doctor'],
  '@kubernetes/client-node': ['shared/providers/kubernetes'],
};

/**
 * Who in the running product may import a concrete provider's folder from outside it: the registry
 * and footprint.ts (what each proxy costs). Tests, bench and infra tooling may.
 */
const PROVIDER_IMPORTERS = ['shared/providers/registry.ts', 'shared/providers/footprint.ts'];

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...Object.entries(LAYER_BANS).map(([layer, banned]) => ({
      name: `layer-${layer}`,
      severity: 'error',
      comment: `${layer}/ must not import from ${banned.join(', ')}/`,
      from: { path: `^${layer}/` },
      to: { path: `^(${banned.join('|')})/` },
    })),
    {
      name: 'provider-sibling',
      severity: 'error',
      comment: 'A provider must not import another provider (only the shared code in shared/providers/*.ts)',
      from: { path: '^shared/providers/([^/]+)/' },
      to: { path: '^shared/providers/[^/]+/', pathNot: '^shared/providers/$1/' },
    },
    {
      name: 'backend-sibling',
      severity: 'error',
      comment: 'A relay backend must not import another backend (only the shared code in relay/backends/*.ts)',
      from: { path: '^relay/backends/([^/]+)/' },
      to: { path: '^relay/backends/[^/]+/', pathNot: '^relay/backends/$1/' },
    },
    {
      name: 'provider-from-registry',
      severity: 'error',
      comment: `Only ${PROVIDER_IMPORTERS.join(' and ')} import concrete providers: the core sees contract.ts`,
      from: {
        path: '^(shared|functions|relay|cli|gateway)/',
        pathNot: [
          '\\.test\\.ts$',
          '^shared/providers/[^/]+/',
          ...PROVIDER_IMPORTERS.map((file) => `^${escape(file)}$`),
        ],
      },
      to: { path: '^shared/providers/[^/]+/' },
    },
    ...Object.entries(SDK_HOMES).map(([sdk, homes]) => ({
      name: `sdk-home-${sdk.replace(/[@/]/g, '-').replace(/^-/, '')}`,
      severity: 'error',
      comment: `The ${sdk} SDK belongs to ${homes.join('/ and ')}/ only`,
      from: { pathNot: `^(${homes.map(escape).join('|')})/` },
      to: { path: `node_modules/${escape(sdk)}/` },
    })),
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Modules must not import each other in a circle, not even for types: move the shared part out.',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    // Follow the TypeScript source before compilation, so `import type` edges count.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|test-results|coverage|\\.egress)/' },
  },
};
