import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { loadConfig } from '../../src/config/index.js';
import { ownString, ownStrings } from '../../src/config/own.js';

// A real collection before each heap reading, so garbage is not mistaken for what is kept.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

test('ownStrings: every string of plain objects and arrays becomes the pool copy, equal and shared', () => {
  const pool = new Map<string, string>();
  class Kept {
    text = 'left alone';
  }
  const kept = new Kept();
  const value = {
    a: 'flux-system',
    b: ['flux-system', { c: 'image.toolkit.fluxcd.io/v1' }, 3, null],
    d: { e: 'image.toolkit.fluxcd.io/v1', f: true },
    kept,
    map: new Map([['k', 'v']]),
  };
  ownStrings(pool, value);
  assert.deepEqual(value, {
    a: 'flux-system',
    b: ['flux-system', { c: 'image.toolkit.fluxcd.io/v1' }, 3, null],
    d: { e: 'image.toolkit.fluxcd.io/v1', f: true },
    kept,
    map: new Map([['k', 'v']]),
  });
  assert.deepEqual([...pool.keys()].sort(), ['flux-system', 'image.toolkit.fluxcd.io/v1']);
  assert.equal(kept.text, 'left alone');
  assert.equal(ownString(pool, 'flux-system'), 'flux-system');
  assert.equal(pool.size, 2);
});

test('ownStrings: a frozen object is left as it is, and what it holds is walked no further', () => {
  const pool = new Map<string, string>();
  const frozen = Object.freeze({ image: 'ghcr.io/example/app', inner: { tag: 'release-candidate' } });
  assert.doesNotThrow(() => ownStrings(pool, { frozen, list: Object.freeze(['flux-system-long']) }));
  assert.deepEqual(frozen, { image: 'ghcr.io/example/app', inner: { tag: 'release-candidate' } });
  assert.equal(pool.size, 0);
});

test('ownStrings: a value that holds itself (a YAML alias) is walked once', () => {
  const pool = new Map<string, string>();
  const spec: Record<string, unknown> = { image: 'ghcr.io/example/app' };
  spec.self = spec;
  const list: unknown[] = ['flux-system'];
  list.push(list);
  ownStrings(pool, { spec, list });
  assert.equal(spec.self, spec);
  assert.equal(list[1], list);
  assert.deepEqual([...pool.keys()].sort(), ['flux-system', 'ghcr.io/example/app']);
});

test('a loaded configuration does not hold the text of the file its objects came from', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pawl-own-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  // Long values (V8 slices substrings of 13 characters or more) beside 8 MB of other objects
  // in the same file, written by a function: the test holds none of the text.
  await writeObjects(join(dir, 'objects.yaml'));
  // A first load of another small file: the code it compiles is not counted.
  const warm = join(dir, 'warm');
  await mkdir(warm);
  await writeFile(
    join(warm, 'warm.yaml'),
    'apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: w\nspec:\n  imageRepositoryRef:\n    name: w\n  policy:\n    semver:\n      range: ">=0.1.0"\n',
  );
  await loadConfig([warm]);
  gc();
  const before = process.memoryUsage().heapUsed;
  const { config, problems } = await loadConfig([join(dir, 'objects.yaml')]);
  assert.deepEqual(
    problems.filter((p) => p.severity === 'error'),
    [],
  );
  // V8 keeps the last regular expression match's input; another match lets go of it.
  /x/.exec('x');
  gc();
  const kept = process.memoryUsage().heapUsed - before;
  const repo = config.imageRepositories.get('team-frontend-production/frontend-application');
  assert.equal(repo?.spec.image, 'registry.example.com/team-frontend/frontend-application');
  assert.ok(kept < 2 * 1024 * 1024, `the configuration kept ${(kept / 1048576).toFixed(1)} MB`);
});

test('objects without labels or annotations share one frozen empty record; labels given are their own', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pawl-own-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const repo = (name: string, labels = '') => `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata:
  name: ${name}
  namespace: apps
${labels}spec:
  image: ghcr.io/example/${name}
  interval: 5m
`;
  await writeFile(
    join(dir, 'repos.yaml'),
    [repo('one'), repo('two'), repo('three', '  labels:\n    team: a\n')].join('---\n'),
  );
  const { config, problems } = await loadConfig([dir]);
  assert.deepEqual(problems, []);
  const one = config.imageRepositories.get('apps/one')!.metadata;
  const two = config.imageRepositories.get('apps/two')!.metadata;
  const three = config.imageRepositories.get('apps/three')!.metadata;
  assert.deepEqual(one.labels, {});
  assert.equal(one.labels, two.labels);
  assert.equal(one.labels, one.annotations);
  assert.ok(Object.isFrozen(one.labels));
  assert.deepEqual(three.labels, { team: 'a' });
  assert.ok(!Object.isFrozen(three.labels));
});

async function writeObjects(path: string): Promise<void> {
  const others = Array.from(
    { length: 40_000 },
    (_, i) =>
      `---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c${i}\ndata:\n  a: "${'y'.repeat(150)}"\n`,
  ).join('');
  const objects = `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata:
  name: frontend-application
  namespace: team-frontend-production
spec:
  image: registry.example.com/team-frontend/frontend-application
  interval: 5m
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata:
  name: frontend-application
  namespace: team-frontend-production
spec:
  imageRepositoryRef:
    name: frontend-application
  policy:
    semver:
      range: ">=1.0.0-0 <2.0.0-0"
${others}`;
  await writeFile(path, objects);
}
