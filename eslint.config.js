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
const RUN = [...BASE, 'config', 'store', 'scan', 'select', 'write', 'guard', 'git', 'notify', 'forge'];
// The daemon sits above run/ with the alerts it sends; it writes files and runs git only
// through run/. The CLI sits on top of everything, and it too leaves git to run/.
const SERVE = [...BASE, 'config', 'store', 'scan', 'select', 'guard', 'notify', 'run', 'kube'];

export const LAYERS = {
  go: [],
  util: [],
  image: [],
  records: ['go', 'util', 'image'],
  config: BASE,
  store: BASE,
  scan: [...BASE, 'config', 'store'],
  select: [...BASE, 'config'],
  write: BASE,
  guard: [...BASE, 'config'],
  git: [...BASE, 'config', 'write', 'guard'],
  notify: [...BASE, 'config', 'guard'],
  // Forges' APIs (pull requests): HTTP only, beside git/; run/ drives them.
  forge: BASE,
  run: RUN,
  // Kubernetes mode: the API server's objects become config/'s Config; status is computed from
  // the scan and run reports (records/), and written back. The daemon wires it.
  kube: [...BASE, 'config'],
  serve: SERVE,
  cli: [...SERVE, 'serve', 'write'],
};

const folders = Object.keys(LAYERS);

/** One override per folder and depth below it: a relative import climbs `depth` levels to src/. */
function layerRules(folder, depth) {
  const up = `^(?:\\.\\./){${depth}}`;
  const allowed = new Set(LAYERS[folder]);
  const patterns = [
    {
      regex: `${up}(?!(?:${folders.join('|')})/)[^./][^/]*/`,
      message: 'this folder is not in the layer table of eslint.config.js (LAYERS); add it there.',
    },
  ];
  for (const other of folders) {
    if (other === folder) continue;
    if (!allowed.has(other)) {
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
