/**
 * A registry whose list flip-flops (Argo CD Image Updater issue 1235), and registries that fail
 * outright: at most one commit (the upgrade), and never a write from an empty list, a 401 or a 500.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pushTags } from '../helpers/push.js';
import { gitObjects, imageObjects, startWorld, type World } from '../helpers/world.js';
import type { RunReport } from '../../src/run/report.js';

const deploy = (tag: string) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  template:
    spec:
      containers:
        - name: api
          image: {{REGISTRY}}/core/api:${tag} # {"$imagepolicy": "flux-system:api"}
`;

async function world(): Promise<World> {
  const w = await startWorld({
    proxy: true,
    files: { 'deploy.yaml': deploy('1.0.0') },
    config: {
      'git.yaml': gitObjects(),
      'api.yaml': imageObjects('api', '{{REGISTRY}}/core/api', 'semver:\n  range: ">=1.0.0"'),
    },
  });
  await pushTags(w.registry.url, 'core/api', ['1.0.0', '1.1.0']);
  return w;
}

describe('a tag list alternating between two versions', () => {
  let w: World;
  before(async () => (w = await world()));
  after(() => w?.close());

  test('ten scans make at most one commit, the upgrade', async () => {
    const start = (await w.git.log(w.repoName, 'main')).length;
    const results: string[] = [];
    for (let i = 0; i < 10; i++) {
      w.proxy!.setTagList('core/api', i % 2 === 0 ? ['1.0.0'] : ['1.0.0', '1.1.0']);
      const r = await w.pawlJson<RunReport>(['run', '--refresh']);
      assert.equal(r.code, 0, r.stderr);
      results.push(`${r.json.policies[0]!.candidate}:${r.json.automations[0]!.result}`);
    }
    const commits = await w.git.log(w.repoName, 'main');
    assert.equal(commits.length, start + 1, results.join(' '));
    assert.match(await w.git.show(w.repoName, 'main', 'deploy.yaml'), /core\/api:1\.1\.0 /);
    assert.equal(results.filter((r) => r.endsWith(':pushed')).length, 1);
    assert.equal(results[1], '1.1.0:pushed');
  });
});

describe('registries that fail', () => {
  let w: World;
  before(async () => (w = await world()));
  after(() => w?.close());

  for (const [label, setUp, code] of [
    ['an empty tag list', (x: World) => x.proxy!.setTagList('core/api', []), 0],
    [
      '401 on the tag list',
      (x: World) => x.proxy!.addFault({ repo: 'core/api', times: Infinity, action: { status: 401 } }),
      1,
    ],
    [
      '500 on the tag list',
      (x: World) => x.proxy!.addFault({ repo: 'core/api', times: Infinity, action: { status: 500 } }),
      1,
    ],
  ] as const) {
    test(`${label}: no write`, async () => {
      w.proxy!.clearFaults();
      w.proxy!.setTagList('core/api', null);
      setUp(w);
      const start = (await w.git.log(w.repoName, 'main')).length;
      const r = await w.pawlJson<RunReport>(['run', '--refresh']);
      assert.equal(r.code, code, r.stderr);
      assert.equal(r.json.policies[0]!.candidate, null);
      assert.ok(r.json.policies[0]!.error);
      assert.equal(r.json.automations[0]!.changes.length, 0);
      assert.equal(r.json.automations[0]!.kept[0]!.reason, 'no-candidate');
      if (code === 1) assert.ok(r.json.repositories[0]!.error);
      assert.equal((await w.git.log(w.repoName, 'main')).length, start);
      assert.match(await w.git.show(w.repoName, 'main', 'deploy.yaml'), /core\/api:1\.0\.0 /);
    });
  }
});
