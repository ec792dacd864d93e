// Lint: typed typescript-eslint rules, no floating promises, no console in production code. The import
// rules (layer boundaries, sibling providers and backends, SDK homes, cycles) are dependency-cruiser's:
// .dependency-cruiser.cjs, run by `npm run lint` after eslint.
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

const ROOT = dirname(fileURLToPath(import.meta.url));

export default defineConfig(
  { ignores: ['dist/', 'node_modules/', 'test-results/', 'coverage/', '.egress/'] },
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: ROOT },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      'no-console': 'error',
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
