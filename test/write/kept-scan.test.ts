/**
 * A kept scan (src/write/setters/tree.ts, `keepScan`): a scan of a tree under a seal answers the
 * next scan under the same seal without reading the tree, and the files a pass rewrote are read
 * again before it is kept, so it is the tree as the pass left it. Anything else reads the tree.
 */
import { afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { forgetScans, keepScan, reusedScans, scanTree } from '../../src/write/setters/tree.js';

const marked = (tag: string) =>
  `kind: Deployment\nimage: ghcr.io/org/app:${tag} # {"$imagepolicy": "flux-system:app"}\n`;

async function tree(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'pawl-kept-scan-'));
  await mkdir(join(root, 'apps'));
  await writeFile(join(root, 'apps', 'a.yaml'), marked('1.0.0'));
  await writeFile(join(root, 'apps', 'b.yaml'), marked('2.0.0'));
  return root;
}

const values = (scan: Awaited<ReturnType<typeof scanTree>>) =>
  scan.files.map((f) => `${f.file} ${f.markers.map((m) => m.value.split(':').pop()).join(',')}`);

describe('a kept scan', () => {
  const roots: string[] = [];
  afterEach(async () => {
    forgetScans();
    for (const r of roots.splice(0)) await rm(r, { recursive: true, force: true });
  });

  test('answers a scan under its seal without reading the tree, with the rewritten files read again', async () => {
    const root = await tree();
    roots.push(root);
    const first = await scanTree(root, 'apps', { seal: 'S1' });
    assert.deepEqual(values(first), ['apps/a.yaml 1.0.0', 'apps/b.yaml 2.0.0']);
    // The pass rewrote a.yaml, then left the tree sealed S2.
    await writeFile(join(root, 'apps', 'a.yaml'), marked('1.1.0'));
    keepScan(root, './apps', 'S2', first, ['apps/a.yaml']);
    // Behind the seal's back: a file the kept scan does not know. A scan under S2 does not see
    // it (it reads nothing); a scan under any other seal, or none, does.
    await writeFile(join(root, 'apps', 'c.yaml'), marked('3.0.0'));
    const before = reusedScans();
    const again = await scanTree(root, 'apps', { seal: 'S2' });
    assert.equal(reusedScans(), before + 1);
    assert.deepEqual(values(again), ['apps/a.yaml 1.1.0', 'apps/b.yaml 2.0.0']);
    for (const seal of ['S1', null, undefined]) {
      const read = await scanTree(root, 'apps', { seal });
      assert.deepEqual(
        values(read),
        ['apps/a.yaml 1.1.0', 'apps/b.yaml 2.0.0', 'apps/c.yaml 3.0.0'],
        `seal ${seal}`,
      );
    }
    assert.equal(reusedScans(), before + 1);
    // Another update path of the same root is its own scan.
    assert.deepEqual(values(await scanTree(root, '.', { seal: 'S2' })).length, 3);
    assert.equal(reusedScans(), before + 1);
  });

  test('is not kept when a rewritten file no longer parses or lost its markers, or the scan had problems', async () => {
    const root = await tree();
    roots.push(root);
    const scan = await scanTree(root, 'apps');
    await writeFile(join(root, 'apps', 'a.yaml'), 'kind: [\n# {"$imagepolicy": "flux-system:app"}\n');
    keepScan(root, 'apps', 'S', scan, ['apps/a.yaml']);
    await scanTree(root, 'apps', { seal: 'S' });
    const n = reusedScans();
    await writeFile(join(root, 'apps', 'a.yaml'), 'kind: Deployment\n');
    keepScan(root, 'apps', 'S', scan, ['apps/a.yaml']);
    await scanTree(root, 'apps', { seal: 'S' });
    // A rewritten file the scan never had.
    keepScan(root, 'apps', 'S', scan, ['apps/elsewhere.yaml']);
    await scanTree(root, 'apps', { seal: 'S' });
    keepScan(root, 'apps', 'S', { ...scan, errors: [{ file: 'apps/x.yaml', message: 'bad' }] }, []);
    await scanTree(root, 'apps', { seal: 'S' });
    assert.equal(reusedScans(), n, 'nothing was kept');
    // A new keep replaces the one before: the old seal answers no more.
    keepScan(root, 'apps', 'S1', await scanTree(root, 'apps'), []);
    keepScan(root, 'apps', 'S2', await scanTree(root, 'apps'), []);
    await scanTree(root, 'apps', { seal: 'S1' });
    assert.equal(reusedScans(), n);
    await scanTree(root, 'apps', { seal: 'S2' });
    assert.equal(reusedScans(), n + 1);
  });

  test("hands out its own lists: a caller's change to one is not the next pass's", async () => {
    const root = await tree();
    roots.push(root);
    keepScan(root, 'apps', 'S', await scanTree(root, 'apps'), []);
    const one = await scanTree(root, 'apps', { seal: 'S' });
    one.files.pop();
    one.warnings.push({ file: 'x', message: 'y' });
    const two = await scanTree(root, 'apps', { seal: 'S' });
    assert.equal(two.files.length, 2);
    assert.equal(two.warnings.length, 0);
  });
});
