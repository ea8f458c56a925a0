// @ts-check
// ESLint with type information (typescript-eslint's recommendedTypeChecked), formatting left to Prettier.
// `npm run lint` runs it with `prettier --check`; `.ci/run` runs that before the tests.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'coverage/', 'node_modules/'] },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        // The projects `npm run typecheck` compiles, not a project per folder: templates/init has its
        // own tsconfig.json for the apps `trellis init` writes, but here it compiles against the sources.
        project: ['./tsconfig.json', './test/fixtures/ai-sdk-chat/tsconfig.json'],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // A leading underscore marks a name left unused on purpose (a rest sibling's dropped keys, a
      // parameter an interface imposes).
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          caughtErrors: 'none',
        },
      ],
      // `any` is never written (no-explicit-any stays on); it reaches the code only through
      // `Array.isArray`, which narrows `unknown` to `any[]`, and `JSON.parse`. The validators of
      // untrusted input (decisions, suspension records, DTOs, JSON schemas) check those values
      // field by field, which these rules would turn into a cast per check.
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // Ports (SessionStore, ModelProvider, hooks, middleware) return promises; an implementation
      // with nothing to await stays `async` so that a throw becomes a rejection.
      '@typescript-eslint/require-await': 'off',
      // The hot path passes a method with its receiver (`andThen(this, pending, this.next)`) to
      // allocate no closure per call (STYLE.md 8); better-sqlite3 types its bound transaction
      // variants (`.immediate`) as methods.
      '@typescript-eslint/unbound-method': 'off',
      // A caught value (or a settled promise's reason, or an abort signal's) is passed on as it
      // was thrown: wrapping it would change what callers see.
      '@typescript-eslint/prefer-promise-reject-errors': [
        'error',
        { allowThrowingAny: true, allowThrowingUnknown: true },
      ],
      // A constructor type that accepts every class needs `...args: any[]` (TypeScript's mixin rule).
      '@typescript-eslint/no-explicit-any': ['error', { ignoreRestArgs: true }],
      // Reflect metadata is read off `value.constructor`, which TypeScript types as `Function`.
      '@typescript-eslint/no-unsafe-function-type': 'off',
      // Values of unknown shape (tool arguments, user ids, schema keywords) become text in messages
      // on purpose; `[object Object]` is the honest rendering of an object there.
      '@typescript-eslint/no-base-to-string': 'off',
      // The getters of an object literal (a session's delegate view, the app's plugin host) and the
      // methods of a class expression (a remote agent's tool) reach the instance that made them.
      '@typescript-eslint/no-this-alias': ['error', { allowedNames: ['app', 'session', 'remote'] }],
      // Node's createServer and React's onClick are handed async handlers that answer their own
      // failures (chatRequestListener, the AG-UI handler); returned promises are still checked.
      '@typescript-eslint/no-misused-promises': [
        'error',
        { checksVoidReturn: { arguments: false, attributes: false } },
      ],
      // The control characters these patterns match are the point: ids, terminal text, XML.
      'no-control-regex': 'off',
      // A named request kind with nothing beyond its base (`CancelRequest extends TurnRequestBase`).
      '@typescript-eslint/no-empty-object-type': ['error', { allowInterfaces: 'with-single-extends' }],
    },
  },
  {
    // Tests read untyped JSON bodies and poke at loosened copies of records on purpose.
    files: ['test/**', 'templates/init/test/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    extends: [tseslint.configs.disableTypeChecked],
    // The few Node globals the plain scripts (jest setup, a loader, an MCP fixture server) use.
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
  },
  prettier,
);
