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
  // The gateway is a library beside the client: it talks to the API over HTTP, never to the back end's code.
  gateway: ['functions', 'relay', 'cli', 'infra'],
};

function isDirectory(path) {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Why importing `specifier` from `file` crosses a boundary, or undefined. Relative specifiers are
 * resolved against the file first: a pattern on the raw text cannot tell `shared/relay/` or
 * `shared/providers/relay/` from the top-level `relay/`, and depends on the importer's depth.
 */
function boundaryViolation(file, specifier) {
  if (!specifier.startsWith('.')) return undefined;
  const target = resolve(dirname(file), specifier);
  const from = relative(ROOT, file).split(sep);
  const to = relative(ROOT, target).split(sep);
  const banned = LAYER_BANS[from[0]] ?? [];
  if (banned.includes(to[0])) return `${from[0]}/ must not import from ${to[0]}/`;
  // shared/providers/<x>/… must not reach shared/providers/<y>/… (files directly in providers/ are shared).
  const inProvider = (parts, path) =>
    parts[0] === 'shared' && parts[1] === 'providers' && parts.length >= 3 && (parts.length > 3 || isDirectory(path));
  if (inProvider(from, file) && inProvider(to, target) && from[2] !== to[2]) {
    return `provider ${from[2]} must not import provider ${to[2]} (only shared code)`;
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
            'Layer and provider boundaries: shared/ ↛ functions, relay, cli, infra, gateway; functions/ ↛ relay, cli; gateway/ ↛ functions, relay, cli, infra; provider ↛ provider',
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
    files: ['scripts/**', 'cli/**', 'test/**', 'infra/local/**', 'bench/**'],
    rules: { 'no-console': 'off' },
  },
  {
    // Plain JavaScript (this file, scripts/*.mjs) is outside the TypeScript project.
    files: ['**/*.{js,mjs,cjs}'],
    extends: [tseslint.configs.disableTypeChecked],
  },
);
