// eslint.config.mjs: the TypeScript linter's one configuration (npm run
// test:lint, part of npm test): typescript-eslint's recommended rules.
// Names starting with _ are unused on purpose (an interface's parameter a
// model ignores, a loop that only counts).
import tseslint from 'typescript-eslint';

export default tseslint.config({ ignores: ['dist/**', 'node_modules/**', 'build*/**'] }, ...tseslint.configs.recommended, {
  rules: {
    '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
  },
});
