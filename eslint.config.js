import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The layer rule (docs/architecture.md): each folder of src/ may import only the folders listed
 * here, and enters each of them through its index.ts. Leaf libraries (go, util, image) import
 * nothing of pawl. Nothing imports run/ or cli/ but the folders above them (serve/, cli/).
 * A folder missing from this table cannot be imported at all: add it here when you add it.
 */
const RUN = ['go', 'util', 'image', 'config', 'store', 'scan', 'select', 'write', 'guard', 'git'];
// The daemon sits beside run/ with the alerts it sends; it writes files and runs git only
// through run/. The CLI sits on top of everything, and it too leaves git to run/.
const SERVE = ['go', 'util', 'image', 'config', 'store', 'scan', 'select', 'guard', 'run', 'notify'];

export const LAYERS = {
  go: [],
  util: [],
  image: [],
  config: ['go', 'util', 'image'],
  store: ['go', 'util', 'image'],
  scan: ['go', 'util', 'image', 'config', 'store'],
  select: ['go', 'util', 'image', 'config'],
  write: ['go', 'util', 'image'],
  guard: ['go', 'util', 'image', 'config', 'store'],
  git: ['go', 'util', 'image', 'config', 'write', 'guard'],
  run: RUN,
  notify: [
    'go',
    'util',
    'image',
    'config',
    'guard',
    { folder: 'scan', typesOnly: true },
    { folder: 'run', typesOnly: true },
  ],
  serve: SERVE,
  cli: [...SERVE, 'serve', 'write'],
};

const folders = Object.keys(LAYERS);

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
    if (!rule) {
      patterns.push({
        regex: `${up}${other}/`,
        message: `${folder}/ may not import ${other}/: layers point one way (docs/architecture.md).`,
      });
      continue;
    }
    patterns.push({
      regex: `${up}${other}/(?!index\\.js$)`,
      message: `enter ${other}/ through ${other}/index.ts (docs/architecture.md).`,
    });
    if (rule.typesOnly) {
      // A type import that matches a pattern with allowTypeImports passes every other pattern too
      // (typescript-eslint), so this one matches the index alone: an inner file stays forbidden.
      patterns.push({
        regex: `${up}${other}/index\\.js$`,
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
