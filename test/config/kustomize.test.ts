/**
 * How an object built by kustomize is traced back to the file and line a person wrote
 * (src/config/kustomize.ts), as kustomize builds it: a resource's name with the overlay's
 * `namePrefix`/`nameSuffix`, patches applied in order (the last one that sets a field wins),
 * generator `files` given as `key=path`, remote resources never read from disk.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { kustomizationRefs, mapBuiltDocument, unitSources } from '../../src/config/kustomize.js';
import { parseDocuments, type SourceDoc } from '../../src/config/yaml-source.js';

const docs = (file: string, text: string): SourceDoc[] => {
  const r = parseDocuments(file, text);
  assert.deepEqual(r.errors, []);
  return r.docs;
};
const one = (file: string, text: string): SourceDoc => docs(file, text)[0]!;

const KFILE = '/repo/overlays/prod/kustomization.yaml';

const DEPLOYMENT = (name: string) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${name}
  labels:
    tier: web
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/org/app:1.0.0
`;

/** The object kustomize printed (its lines do not matter: they are kustomize's, not a file's). */
const built = (name: string, kind = 'Deployment'): SourceDoc =>
  one('<built>', DEPLOYMENT(name).replace('kind: Deployment', `kind: ${kind}`));

describe('a built object is mapped to the resource it came from', () => {
  // After a comment and another document: the object's own line is not the file's first.
  const base = docs(
    '/repo/base/deployment.yaml',
    `# the app\nkind: ConfigMap\nmetadata:\n  name: other\n---\n${DEPLOYMENT('app')}`,
  )[1]!;
  const service = one(
    '/repo/base/service.yaml',
    'apiVersion: v1\nkind: Service\nmetadata:\n  name: app\n  labels:\n    tier: web\nspec:\n  ports: []\n',
  );

  test('the same name: the resource file, and the line of each field in it', () => {
    const m = mapBuiltDocument(built('app'), KFILE, [service, base], []);
    assert.equal(m.file, '/repo/base/deployment.yaml');
    assert.equal(m.line, 6);
    assert.equal(m.lineOf(['spec', 'template', 'spec', 'containers', 0, 'image']), 18);
    assert.equal(m.fileOf?.(['spec', 'replicas']), '/repo/base/deployment.yaml');
    assert.equal(m.via, '/repo/overlays/prod');
  });

  test('only a resource of the same kind: a Service of that name is not the Deployment', () => {
    const m = mapBuiltDocument(built('app'), KFILE, [service], []);
    assert.equal(m.file, KFILE, 'no Deployment named app: the kustomization, without a line');
    assert.equal(m.line, 0);
    assert.equal(
      mapBuiltDocument(built('app', 'Service'), KFILE, [base, service], []).file,
      '/repo/base/service.yaml',
    );
  });

  test('a prefixed and suffixed name maps to the longest resource name it contains', () => {
    const web = one('/repo/base/web-app.yaml', DEPLOYMENT('web-app'));
    for (const resources of [
      [base, web],
      [web, base],
    ]) {
      const m = mapBuiltDocument(built('prod-web-app-v2'), KFILE, resources, []);
      assert.equal(m.file, '/repo/base/web-app.yaml');
    }
    assert.equal(
      mapBuiltDocument(built('prod-app'), KFILE, [web, base], []).file,
      '/repo/base/deployment.yaml',
    );
  });

  test('a name that contains no resource name is not mapped', () => {
    const m = mapBuiltDocument(built('other'), KFILE, [base], []);
    assert.deepEqual([m.file, m.line, m.lineOf(['spec'])], [KFILE, 0, 0]);
  });

  test('an object without kind or name is not mapped', () => {
    const m = mapBuiltDocument(one('<built>', 'kind: Deployment\nmetadata: {}\n'), KFILE, [base], []);
    assert.equal(m.file, KFILE);
  });
});

describe('patches: the line of a field is the last patch that sets it', () => {
  const base = one('/repo/base/deployment.yaml', DEPLOYMENT('app'));
  const first = one(
    '/repo/overlays/prod/replicas.yaml',
    'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: 2\n',
  );
  const second = one(
    '/repo/overlays/prod/more.yaml',
    'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n# a comment\nspec:\n  # and one more\n  replicas: 3\n',
  );

  test('of two patches setting replicas, the last listed wins', () => {
    const m = mapBuiltDocument(built('app'), KFILE, [base], [first, second]);
    assert.equal(m.fileOf?.(['spec', 'replicas']), '/repo/overlays/prod/more.yaml');
    assert.equal(m.lineOf(['spec', 'replicas']), 8);
    const swapped = mapBuiltDocument(built('app'), KFILE, [base], [second, first]);
    assert.equal(swapped.fileOf?.(['spec', 'replicas']), '/repo/overlays/prod/replicas.yaml');
    assert.equal(swapped.lineOf(['spec', 'replicas']), 6);
  });

  test('a field no patch sets stays in the resource file', () => {
    const m = mapBuiltDocument(built('app'), KFILE, [base], [first, second]);
    assert.equal(
      m.fileOf?.(['spec', 'template', 'spec', 'containers', 0, 'image']),
      '/repo/base/deployment.yaml',
    );
    assert.equal(m.lineOf(['spec', 'template', 'spec', 'containers', 0, 'image']), 13);
  });

  test("a patch names its target: apiVersion, kind, metadata.name and namespace stay the resource's own", () => {
    const m = mapBuiltDocument(built('app'), KFILE, [base], [first]);
    for (const path of [
      ['apiVersion'],
      ['kind'],
      ['metadata'],
      ['metadata', 'name'],
      [],
    ] as PropertyKey[][]) {
      assert.equal(m.fileOf?.(path), '/repo/base/deployment.yaml', JSON.stringify(path));
      assert.equal(m.lineOf(path), base.lineOf(path), JSON.stringify(path));
    }
  });

  test('a patch of the prefixed object by its original name, and one by the built name, both apply', () => {
    const byBuilt = one(
      '/repo/overlays/prod/built.yaml',
      'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: prod-app\nspec:\n  paused: true\n',
    );
    const m = mapBuiltDocument(built('prod-app'), KFILE, [base], [first, byBuilt]);
    assert.equal(m.fileOf?.(['spec', 'replicas']), '/repo/overlays/prod/replicas.yaml');
    assert.equal(m.fileOf?.(['spec', 'paused']), '/repo/overlays/prod/built.yaml');
  });

  test('a patch of another kind, or of another object, does not apply', () => {
    const servicePatch = one(
      '/repo/overlays/prod/service.yaml',
      'apiVersion: v1\nkind: Service\nmetadata:\n  name: app\n  labels:\n    tier: api\nspec:\n  replicas: 9\n',
    );
    const otherPatch = one(
      '/repo/overlays/prod/other.yaml',
      'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: other\nspec:\n  replicas: 9\n',
    );
    const m = mapBuiltDocument(built('app'), KFILE, [base], [servicePatch, otherPatch]);
    assert.equal(m.fileOf?.(['spec', 'replicas']), '/repo/base/deployment.yaml');
    assert.equal(m.fileOf?.(['metadata', 'labels', 'tier']), '/repo/base/deployment.yaml');
  });
});

describe('what a kustomization reads', () => {
  const dir = '/repo/app';
  test('resources, bases, components and crds; remote ones are left out', () => {
    const r = kustomizationRefs(
      dir,
      `resources:
  - deployment.yaml
  - ../base
  - https://example.com/remote.yaml
  - github.com/org/repo//deploy?ref=v1.0.0
  - git@github.com:org/repo.git//deploy
  - ssh://git@example.com/org/repo.git
  - ../shared?ref=main
bases: [../legacy]
components: [../components/tls]
crds: [crds/thing.yaml]
`,
    );
    assert.deepEqual(r.resources, [
      resolve(dir, 'deployment.yaml'),
      resolve(dir, '../base'),
      resolve(dir, '../legacy'),
      resolve(dir, '../components/tls'),
      resolve(dir, 'crds/thing.yaml'),
    ]);
  });

  test('patches of every form; an inline patch is text, not a path', () => {
    const r = kustomizationRefs(
      dir,
      `patches:
  - path: replicas.yaml
  - patch: |-
      - op: replace
        path: /spec/replicas
        value: 3
    target: {kind: Deployment}
patchesStrategicMerge:
  - smp.yaml
  - |-
    apiVersion: apps/v1
    kind: Deployment
patchesJson6902:
  - path: json6902.yaml
    target: {kind: Deployment, name: app}
`,
    );
    assert.deepEqual(r.patches, [
      resolve(dir, 'replicas.yaml'),
      resolve(dir, 'json6902.yaml'),
      resolve(dir, 'smp.yaml'),
    ]);
  });

  test('generator files split at the first "=" (key=path), envs, env, replacements', () => {
    const r = kustomizationRefs(
      dir,
      `configMapGenerator:
  - name: app
    files:
      - config.json=files/app.json
      - plain.txt
    envs: [app.env]
secretGenerator:
  - name: s
    env: secret.env
replacements:
  - path: replacements.yaml
`,
    );
    assert.deepEqual(r.other, [
      resolve(dir, 'files/app.json'),
      resolve(dir, 'plain.txt'),
      resolve(dir, 'app.env'),
      resolve(dir, 'secret.env'),
      resolve(dir, 'replacements.yaml'),
    ]);
  });

  test('a kustomization that does not parse names nothing', () => {
    assert.deepEqual(kustomizationRefs(dir, 'resources: [a.yaml\n'), {
      resources: [],
      patches: [],
      other: [],
    });
  });

  test('through bases: resources of every level, patches and consumed files', async () => {
    const root = await mkdtemp(join(tmpdir(), 'pawl-kustomize-'));
    try {
      const put = async (p: string, text: string) => {
        await mkdir(join(root, p, '..'), { recursive: true });
        await writeFile(join(root, p), text);
      };
      await put(
        'base/kustomization.yaml',
        'resources: [deployment.yaml]\nconfigMapGenerator:\n  - name: c\n    files: [k=conf.txt]\n',
      );
      await put('base/deployment.yaml', DEPLOYMENT('app'));
      await put('base/conf.txt', 'x');
      await put(
        'prod/kustomization.yaml',
        'resources: [../base, service.yaml]\npatches:\n  - path: replicas.yaml\n',
      );
      await put('prod/service.yaml', 'kind: Service\n');
      await put('prod/replicas.yaml', 'kind: Deployment\n');
      const s = await unitSources(join(root, 'prod'));
      assert.deepEqual(s.resources.sort(), [
        join(root, 'base/deployment.yaml'),
        join(root, 'prod/service.yaml'),
      ]);
      assert.deepEqual(s.patches, [join(root, 'prod/replicas.yaml')]);
      for (const f of [
        'base',
        'base/deployment.yaml',
        'base/conf.txt',
        'prod/replicas.yaml',
        'prod/service.yaml',
      ])
        assert.ok(s.consumed.includes(join(root, f)), f);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
