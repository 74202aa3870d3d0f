/**
 * No two folders of src/ depend on each other, through any chain, counting type imports too:
 * the layer rule (eslint.config.js) lets a folder import only types from some folders, and a
 * type is as much a dependency of the design as a function is.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { describeCycle, findCycle, folderGraph, importsOf } from './folder-graph.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'pawl-cycles-'));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

describe('folder cycles', () => {
  test('every kind of import is read, types included', () => {
    const text = [
      "import { a } from './a.js';",
      "import type { B } from '../b/index.js';",
      "import { type C } from '../c/index.js';",
      "export type { D } from '../d/index.js';",
      "export * from '../e/index.js';",
      "const f = await import('../f/index.js');",
      "let g: import('../g/index.js').G;",
    ].join('\n');
    assert.deepEqual(
      importsOf('x.ts', text).map((i) => `${i.line} ${i.specifier}`),
      [
        '1 ./a.js',
        '2 ../b/index.js',
        '3 ../c/index.js',
        '4 ../d/index.js',
        '5 ../e/index.js',
        '6 ../f/index.js',
        '7 ../g/index.js',
      ],
    );
  });

  test('a cycle made of type imports alone is found and named by its imports', () => {
    const dir = tree({
      'src/a/index.ts': "export type { A } from './a.js';\n",
      'src/a/a.ts': "import type { B } from '../b/index.js';\nexport type A = B[];\n",
      'src/b/index.ts': "import { z } from 'zod';\n\nexport type { B } from './b.js';\n",
      'src/b/b.ts': "import type { C } from '../c/index.js';\nexport type B = C;\n",
      'src/c/index.ts': "export type C = import('../a/index.js').A | string;\n",
      'src/d/index.ts': "import type { A } from '../a/index.js';\nexport type D = A;\n",
    });
    try {
      const graph = folderGraph(dir);
      const cycle = findCycle(graph);
      assert.deepEqual(cycle, ['a', 'b', 'c', 'a']);
      assert.equal(
        describeCycle(graph, cycle),
        [
          "a/ → b/ (src/a/a.ts:1 '../b/index.js')",
          "b/ → c/ (src/b/b.ts:1 '../c/index.js')",
          "c/ → a/ (src/c/index.ts:1 '../a/index.js')",
        ].join('\n'),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('folders that import each other one way have no cycle', () => {
    const dir = tree({
      'src/a/index.ts': "import type { B } from '../b/index.js';\nexport type A = B;\n",
      'src/b/index.ts': "import { c } from '../c/index.js';\nexport type B = typeof c;\n",
      'src/c/index.ts': 'export const c = 1;\n',
    });
    try {
      assert.equal(findCycle(folderGraph(dir)), null);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('src/ has no folder cycle', () => {
    const graph = folderGraph(root);
    const cycle = findCycle(graph);
    assert.equal(cycle, null, cycle ? `a folder cycle in src/:\n${describeCycle(graph, cycle)}` : '');
  });
});
