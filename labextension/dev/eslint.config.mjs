// ESLint for the bridge's TypeScript (src/, test/); run from labextension/ (see dev/package.json).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['lib/**', 'dev/**', 'node_modules/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['src/**/*.ts', 'test/**/*.ts'],
    rules: {
      eqeqeq: 'error',
      'no-console': ['error', { allow: ['debug', 'warn'] }],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { caughtErrors: 'none', argsIgnorePattern: '^_' }
      ]
    }
  }
);
