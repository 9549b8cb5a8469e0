// Lint rules; the override on src/workflows keeps workflow code deterministic (DESIGN.md invariant 8).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = builtinModules.flatMap((m) => [m, `node:${m}`]);

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.data/**', 'jest.config.js', 'eslint.config.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { parserOptions: { project: './tsconfig.json', tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
    },
  },
  {
    // The web console runs in the browser: its own tsconfig (DOM, JSX over Preact).
    files: ['src/console/app/**/*.{ts,tsx}'],
    languageOptions: { parserOptions: { project: './src/console/app/tsconfig.json', tsconfigRootDir: import.meta.dirname } },
  },
  {
    // Plain Node scripts: no type information, Node's globals.
    files: ['scripts/**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { ...tseslint.configs.disableTypeChecked.languageOptions, globals: { process: 'readonly', console: 'readonly' } },
  },
  {
    // Jest's reporters (test/helpers/*-reporter.js): CommonJS modules that Jest loads untransformed.
    files: ['test/**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      sourceType: 'commonjs',
      globals: { process: 'readonly', require: 'readonly', module: 'writable' },
    },
    rules: { ...tseslint.configs.disableTypeChecked.rules, '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['src/workflows/**/*.ts', 'src/session/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins,
          patterns: [
            { group: ['@temporalio/activity', '@temporalio/client', '@temporalio/worker', '@temporalio/testing'], message: 'Workflow code runs in the deterministic sandbox.' },
            { group: ['dockerode', '@anthropic-ai/sdk', '@anthropic-ai/sdk/*', '@modelcontextprotocol/sdk', '@modelcontextprotocol/sdk/*'], message: 'I/O libraries belong in activities.' },
            { group: ['../activities', '../activities/*', '../model', '../model/*', '../log', '../log/*', '../infra', '../infra/*'], message: 'Import activities only as types.', allowTypeImports: true },
          ],
        },
      ],
    },
  },
);
