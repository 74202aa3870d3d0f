/**
 * One bad object stops nothing (issue 10, item 1), through the real CLI against a real
 * registry and git server: the broken automation is reported with file:line and skipped,
 * the good one pushes, and the exit code says something was skipped. `--strict` keeps the
 * all-or-nothing behaviour; `validate` still fails.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pushTags } from '../helpers/push.js';
import { gitObjects, imageObjects, startWorld, type World } from '../helpers/world.js';
import type { RunReport } from '../../src/run/report.js';

const BROKEN = `apiVersion: image.toolkit.fluxcd.io/v1beta1
kind: ImageUpdateAutomation
metadata:
  name: legacy
  namespace: flux-system
spec:
  interval: 5m
  sourceRef:
    kind: GitRepository
    name: fleet
  git:
    commit:
      author: {name: bot, email: bot@example.com}
      messageTemplate: '{{ range .Updated.Images }}{{ . }}{{ end }}'
  update:
    path: ./
`;

interface Skipped {
  kind: string;
  name: string;
  file: string;
  line: number | null;
  reason: string;
  dependsOn: string | null;
  message: string;
}

describe('an invalid object among good ones', () => {
  let w: World;
  before(async () => {
    w = await startWorld({
      files: {
        'apps/deploy.yaml': `image: {{REGISTRY}}/apps/app:1.0.0 # {"$imagepolicy": "flux-system:app"}\n`,
      },
      config: {
        'git.yaml': gitObjects(),
        'app.yaml': imageObjects('app', '{{REGISTRY}}/apps/app', 'semver:\n  range: 1.x'),
        'legacy.yaml': BROKEN,
      },
    });
    await pushTags(w.registry.url, 'apps/app', ['1.0.0', '1.1.0']);
  });
  after(() => w?.close());

  test('--strict refuses to run at all (exit 2) and pushes nothing', async () => {
    const r = await w.pawl(['run', '--strict']);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /legacy\.yaml:14: ImageUpdateAutomation flux-system\/legacy: .*\.Updated/);
    assert.equal((await w.git.log(w.repoName, 'main')).length, 1);
  });

  test('validate exits 2 naming the file and line', async () => {
    const r = await w.pawl(['validate']);
    assert.equal(r.code, 2);
    assert.match(r.stdout, /legacy\.yaml:14: ImageUpdateAutomation flux-system\/legacy: .*\.Updated/);
  });

  test('run skips the broken automation, pushes the good one, exits 1 and says what was skipped', async () => {
    const { json, code, stderr } = await w.pawlJson<RunReport & { skipped: Skipped[] }>(['run']);
    assert.equal(code, 1, stderr);
    assert.deepEqual(
      json.automations.map((a) => [a.name, a.result]),
      [['flux-system/fleet', 'pushed']],
    );
    assert.deepEqual(json.skipped, [
      {
        kind: 'ImageUpdateAutomation',
        name: 'flux-system/legacy',
        file: `${w.configDir}/legacy.yaml`,
        line: 1,
        reason: 'invalid',
        dependsOn: null,
        message: json.skipped[0]!.message,
      },
    ]);
    assert.match(json.skipped[0]!.message, /legacy\.yaml:14: .*\.Updated/);
    assert.match(stderr, /pawl: skipped ImageUpdateAutomation flux-system\/legacy/);
    assert.match(await w.git.show(w.repoName, 'main', 'apps/deploy.yaml'), /app:1\.1\.0/);
  });
});
