/**
 * pawl supports Node ≥ 20.19 (package.json engines), so every production dependency must run
 * there. One declares more: cookie 2 (fastify → light-my-request → cookie) says `node >=22`.
 * Its code uses nothing of Node 22; it is ESM only, and light-my-request `require()`s it, which
 * needs require(esm) — on by default since Node 20.19, the reason pawl's floor is 20.19 — and
 * the shipped bundle (dist/) has it bundled in, so there it is not even required. pawl never
 * calls the one function light-my-request takes from it (`fastify.inject()` with cookies); this
 * test does, on the Node it runs on (20 in CI), and fails when another dependency asks for a
 * newer Node than pawl's floor without a reason written here and in docs/deploy.md.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ROOT } from '../helpers/world.js';

/** Dependencies whose engines exclude Node 20.19, and why they run there anyway. */
const ALLOWED: Record<string, string> = {
  cookie: 'ESM only, loaded with require(esm) (Node ≥ 20.19); uses no Node 22 API; exercised below',
};

interface Manifest {
  name: string;
  version: string;
  engines?: { node?: string };
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

/** The production tree, resolved as Node resolves it from each package's own folder. */
function productionTree(): Map<string, { manifest: Manifest; dir: string }> {
  const seen = new Map<string, { manifest: Manifest; dir: string }>();
  // As Node looks for a package: node_modules/NAME in the folder and each one above it (a
  // package's `exports` may hide its package.json from require.resolve).
  const find = (fromDir: string, name: string): string | null => {
    for (let dir = fromDir; ; dir = dirname(dir)) {
      const file = join(dir, 'node_modules', name, 'package.json');
      if (existsSync(file)) return file;
      if (dirname(dir) === dir) return null;
    }
  };
  const visit = (fromDir: string, names: string[]) => {
    for (const name of names) {
      const file = find(fromDir, name);
      if (!file) continue; // an optional dependency not installed here
      if ([...seen.values()].some((s) => s.dir === dirname(file))) continue;
      const manifest = JSON.parse(readFileSync(file, 'utf8')) as Manifest;
      seen.set(`${manifest.name}@${manifest.version}`, { manifest, dir: dirname(file) });
      visit(dirname(file), Object.keys({ ...manifest.dependencies, ...manifest.optionalDependencies }));
    }
  };
  const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Manifest;
  visit(ROOT, Object.keys(root.dependencies ?? {}));
  return seen;
}

/** The lowest Node major a `>=N` range (the form every package here uses) allows; null for others. */
function floorMajor(range: string): number | null {
  const m = /^\s*>=\s*v?(\d+)(?:\.(\d+))?/.exec(range);
  if (!m) return null;
  return Number(m[1]) + Number(m[2] ?? 0) / 1000;
}

test('no production dependency asks for a newer Node than pawl supports, but those with a reason', () => {
  const tree = productionTree();
  assert.ok(tree.size > 20, `the walk found the tree (${tree.size} packages)`);
  const pawlFloor = floorMajor(
    (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Manifest).engines!.node!,
  )!;
  const newer = [...tree.entries()]
    .filter(([, { manifest }]) => {
      const f = manifest.engines?.node ? floorMajor(manifest.engines.node) : null;
      return f !== null && f > pawlFloor;
    })
    .map(([id, { manifest }]) => ({ id, name: manifest.name, engines: manifest.engines!.node! }));
  const unexplained = newer.filter((n) => !(n.name in ALLOWED));
  assert.deepEqual(
    unexplained,
    [],
    'a dependency needs a newer Node: resolve it (overrides) or explain it here',
  );
  assert.ok(
    newer.some((n) => n.name === 'cookie'),
    'cookie no longer asks for Node 22: remove it from ALLOWED and docs/deploy.md',
  );
});

test(`light-my-request loads cookie and uses it on this Node (${process.version})`, async () => {
  const require = createRequire(join(ROOT, 'node_modules', 'fastify', 'package.json'));
  // The CommonJS path pawl's sources take (tsx, require(esm)); the bundle has cookie inlined.
  const inject = require('light-my-request') as (
    handler: (req: { headers: Record<string, string> }, res: { end(body: string): void }) => void,
    opts: { url: string; cookies: Record<string, string> },
  ) => Promise<{ body: string }>;
  const res = await inject((req, res) => res.end(req.headers.cookie ?? ''), {
    url: '/',
    cookies: { pawl_admin: 'abc', other: 'x y' },
  });
  assert.equal(res.body, 'pawl_admin=abc; other=x%20y');
});
