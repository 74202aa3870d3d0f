import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.pawl/', 'coverage/', 'bench/out/'] },
  js.configs.recommended,
  ...tseslint.configs.strict,
  {
    rules: {
      // TypeScript checks identifiers itself, with Node's types (typescript-eslint's advice).
      'no-undef': 'off',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-control-regex': 'off',
    },
  },
);
