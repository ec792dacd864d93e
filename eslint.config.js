// Lint: typed typescript-eslint rules, no floating promises, no console in production code, and layer boundaries.
import { statSync } from 'node:fs';
import { dirname, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

const ROOT = dirname(fileURLToPath(import.meta.url));

/** Top-level folders a layer must not import from (style.md §Conventions 1). */
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

/** Provider SDKs and the folders each may be imported from (style.md: no SDK in the core). */
const SDK_HOMES = {
  // The gcp provider, and doctor's preflight, which reads the project's networks, firewalls and quotas.
  '@google-cloud/compute': ['shared/providers/gcp', 'cli/doctor'],
  '@kubernetes/client-node': 'shared/providers/kubernetes',
};

/**
 * Who in the running product may import a concrete provider's folder from outside it: the registry
 * (the providers) and footprint.ts (what each proxy costs). Tests, bench and infra tooling (infra/terraform
 * reads the gcp option defaults) may.
 */
const PROVIDER_IMPORTERS = ['shared/providers/registry.ts', 'shared/providers/footprint.ts'];
const PRODUCT_LAYERS = ['shared', 'functions', 'relay', 'cli', 'gateway'];

function isDirectory(path) {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** The npm package a bare specifier names (`@scope/name` or `name`), without a subpath. */
function packageOf(specifier) {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/**
 * The folder `parts` (a path split at `/`) is in when it lies in `<a>/<b>/<name>/…`: the name of the
 * provider (`shared/providers/<name>/`) or relay backend (`relay/backends/<name>/`) folder, or
 * undefined. Files directly in `shared/providers/` or `relay/backends/` are shared, not a sibling.
 */
function siblingFolder(parts, path, a, b) {
  if (parts[0] !== a || parts[1] !== b || parts.length < 3) return undefined;
  return parts.length > 3 || isDirectory(path) ? parts[2] : undefined;
}

/**
 * Why importing `specifier` from `file` crosses a boundary, or undefined. Relative specifiers are
 * resolved against the file first: a pattern on the raw text cannot tell `shared/relay/` or
 * `shared/providers/relayed/` from the top-level `relay/`, and depends on the importer's depth.
 */
function boundaryViolation(file, specifier) {
  const fromPath = relative(ROOT, file).split(sep).join('/');
  if (!specifier.startsWith('.')) {
    const homes = [SDK_HOMES[packageOf(specifier)] ?? []].flat();
    if (homes.length > 0 && !homes.some((home) => fromPath.startsWith(`${home}/`)))
      return `the ${packageOf(specifier)} SDK belongs to ${homes.join('/ and ')}/ only`;
    return undefined;
  }
  const target = resolve(dirname(file), specifier);
  const from = fromPath.split('/');
  const to = relative(ROOT, target).split(sep);
  const banned = LAYER_BANS[from[0]] ?? [];
  if (banned.includes(to[0])) return `${from[0]}/ must not import from ${to[0]}/`;
  for (const [a, b, what] of [
    ['shared', 'providers', 'provider'],
    ['relay', 'backends', 'backend'],
  ]) {
    const mine = siblingFolder(from, file, a, b);
    const theirs = siblingFolder(to, target, a, b);
    if (theirs && mine && mine !== theirs)
      return `${what} ${mine} must not import ${what} ${theirs} (only shared code)`;
    const product = PRODUCT_LAYERS.includes(from[0]) && !/\.test\.ts$/.test(fromPath);
    if (what === 'provider' && theirs && !mine && product && !PROVIDER_IMPORTERS.includes(fromPath))
      return `only ${PROVIDER_IMPORTERS.join(' and ')} import concrete providers (the core sees contract.ts)`;
  }
  return undefined;
}

const boundariesPlugin = {
  rules: {
    'import-boundaries': {
      meta: {
        type: 'problem',
        docs: {
          description:
            'Layer and sibling boundaries: LAYER_BANS per top-level folder; provider ↛ provider and backend ↛ backend; a concrete provider only from the registry; a provider SDK only in its provider folder',
        },
        schema: [],
      },
      create(context) {
        const check = (source) => {
          if (source?.type !== 'Literal' || typeof source.value !== 'string') return;
          const reason = boundaryViolation(context.filename, source.value);
          if (reason) context.report({ node: source, message: `Import of "${source.value}": ${reason}.` });
        };
        return {
          ImportDeclaration: (node) => check(node.source),
          ExportNamedDeclaration: (node) => check(node.source),
          ExportAllDeclaration: (node) => check(node.source),
          ImportExpression: (node) => check(node.source),
          TSImportType: (node) => check(node.argument?.literal ?? node.argument),
        };
      },
    },
  },
};

export default defineConfig(
  { ignores: ['dist/', 'node_modules/', 'test-results/', 'coverage/', '.egress/'] },
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: ROOT },
    },
    plugins: { local: boundariesPlugin },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      'no-console': 'error',
      'local/import-boundaries': 'error',
      // `_name` marks a deliberately unused binding, e.g. a key dropped by `{ key: _k, ...rest }`.
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
        },
      ],
    },
  },
  {
    files: ['scripts/**', 'cli/**', 'test/**', 'infra/local/**', 'infra/echo/**', 'bench/**'],
    rules: { 'no-console': 'off' },
  },
  {
    // Plain JavaScript (this file, scripts/*.mjs) is outside the TypeScript project.
    files: ['**/*.{js,mjs,cjs}'],
    extends: [tseslint.configs.disableTypeChecked],
  },
);
