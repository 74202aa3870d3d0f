import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The layer rule (docs/architecture.md): each folder of src/ may import only the folders listed
 * here, and enters each of them through its index.ts. Leaf libraries (go, util, image) import
 * nothing of pawl; records/ only them. Nothing imports run/ or cli/ but the folders above them
 * (serve/, cli/).
 * A folder missing from this table cannot be imported at all: add it here when you add it.
 */
// The records every layer shares (src/records/) sit just above the leaf libraries: any folder may
// import them, so the layers that make a record and those that read it need not import each other.
const BASE = ['go', 'util', 'image', 'records'];
const RUN = [...BASE, 'config', 'store', 'scan', 'select', 'write', 'guard', 'git', 'notify'];
// The daemon sits above run/; the CLI sits on top of everything.
const SERVE = [...RUN, 'run'];

export const LAYERS = {
  go: [],
  util: [],
  image: [],
  records: ['go', 'util', 'image'],
  config: BASE,
  store: [...BASE, 'config'],
  scan: [...BASE, 'config', 'store'],
  select: [...BASE, 'config'],
  write: BASE,
  guard: [...BASE, 'config', 'select'],
  git: [...BASE, 'config', 'write', 'guard'],
  notify: [...BASE, 'config', 'guard'],
  run: RUN,
  serve: SERVE,
  cli: [...SERVE, 'serve'],
};

/**
 * The one import that is not through an index.ts or down the layers: configuration checks a
 * commit message template by rendering it over Flux's commit-message data, git/flux.ts, a pure
 * module that imports only go/.
 */
const EXCEPTIONS = { config: { git: 'flux.js' } };

const folders = Object.keys(LAYERS);
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** One override per folder and depth below it: a relative import climbs `depth` levels to src/. */
function layerRules(folder, depth) {
  const up = `^(?:\\.\\./){${depth}}`;
  const allowed = new Map(LAYERS[folder].map((a) => (typeof a === 'string' ? [a, {}] : [a.folder, a])));
  const patterns = [
    {
      regex: `${up}(?!(?:${folders.join('|')})/)[^./][^/]*/`,
      message: 'this folder is not in the layer table of eslint.config.js (LAYERS); add it there.',
    },
  ];
  for (const other of folders) {
    if (other === folder) continue;
    const rule = allowed.get(other);
    const exception = EXCEPTIONS[folder]?.[other];
    if (!rule) {
      patterns.push({
        regex: exception ? `${up}${other}/(?!${escape(exception)}$)` : `${up}${other}/`,
        message: `${folder}/ may not import ${other}/: layers point one way (docs/architecture.md).`,
      });
      continue;
    }
    const entry = exception ? `(?:index\\.js|${escape(exception)})` : 'index\\.js';
    patterns.push({
      regex: `${up}${other}/(?!${entry}$)`,
      message: `enter ${other}/ through ${other}/index.ts (docs/architecture.md).`,
    });
    if (rule.typesOnly) {
      patterns.push({
        regex: `${up}${other}/`,
        message: `${folder}/ may import only types from ${other}/ (docs/architecture.md).`,
        allowTypeImports: true,
      });
    }
  }
  return {
    files: [`src/${folder}/${'*/'.repeat(depth - 1)}*.ts`],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns }] },
  };
}

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
  {
    // The store is asynchronous (docs/store.md): a call not awaited is a write that may not
    // happen, or a Promise read as a record. These rules need the type checker.
    files: ['src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          // node:test queues a test or suite itself; its Promise is for those who want to wait.
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] },
          ],
        },
      ],
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
    },
  },
  ...folders.flatMap((folder) => [1, 2, 3, 4].map((depth) => layerRules(folder, depth))),
);
