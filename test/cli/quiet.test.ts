/**
 * Only pawl's own words on stderr: a value such as `{{ .fluxns }}` (a template placeholder in
 * a repository that is rendered elsewhere) is a YAML mapping used as a key, which the yaml
 * library would warn about through Node's process warnings on every object.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../helpers/world.js';

const TEMPLATED = `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata:
  name: app
  namespace: {{ .fluxns }}
spec:
  imageRepositoryRef:
    name: app
  policy:
    semver:
      range: 1.x
`;

test('library warnings never reach stderr: validate reports the value, nothing else', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pawl-quiet-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'policy.yaml'), TEMPLATED);
  const r = await runCli(['validate', '-c', dir]);
  assert.equal(r.code, 2);
  assert.match(r.stdout, /policy\.yaml:5: ImagePolicy default\/app: metadata\.namespace: expected a string/);
  assert.equal(r.stderr, '');
});

test('library warnings never reach stderr: setters apply over a templated manifest', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pawl-quiet-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await writeFile(
    join(dir, 'deploy.yaml'),
    `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
  namespace: {{ .fluxns }}
spec:
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/org/app:1.0.0 # {"$imagepolicy": "apps:app"}
`,
  );
  const r = await runCli(['setters', 'apply', dir, '--image', 'apps:app=ghcr.io/org/app:1.1.0']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /1\.1\.0/);
  assert.equal(r.stderr, '');
});
