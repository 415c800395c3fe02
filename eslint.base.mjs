// The one ESLint config of the TypeScript packages (labextension/, vscode-extension/). The root has no
// node_modules, so each package's eslint.config.mjs passes in its own @eslint/js and typescript-eslint.
export default function config(js, tseslint) {
  return tseslint.config(
    { ignores: ['**/node_modules/**', '**/lib/**', '**/out/**', '**/build/**'] },
    js.configs.recommended,
    ...tseslint.configs.recommended,
    {
      files: ['**/*.ts'],
      rules: {
        eqeqeq: 'error',
        'no-console': ['error', { allow: ['debug', 'warn'] }],
        '@typescript-eslint/no-unused-vars': ['error', { caughtErrors: 'none', argsIgnorePattern: '^_' }]
      }
    }
  );
}
