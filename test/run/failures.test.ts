/**
 * `pawl run` against Git that misbehaves: a push race it must win without losing the other
 * writer's commit, and failures (unreachable server, bad credentials, a protected branch) that
 * exit 1 with a clear error and leave a workspace the next run can use.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pushTags } from '../helpers/push.js';
import { GIT_PASSWORD, gitObjects, imageObjects, startWorld, type World } from '../helpers/world.js';
import type { RunReport } from '../../src/run/report.js';

const deploy = (tag: string) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    spec:
      containers:
        - name: app
          image: {{REGISTRY}}/org/app:${tag} # {"$imagepolicy": "flux-system:app"}
`;

async function world(): Promise<World> {
  const w = await startWorld({
    files: { 'deploy.yaml': deploy('1.0.0'), 'notes.txt': 'hello\n' },
    config: {
      'git.yaml': gitObjects(),
      'app.yaml': imageObjects('app', '{{REGISTRY}}/org/app', 'semver:\n  range: ">=1.0.0"'),
    },
  });
  await pushTags(w.registry.url, 'org/app', ['1.0.0', '1.1.0']);
  return w;
}

describe('a push race', () => {
  let w: World;
  before(async () => (w = await world()));
  after(() => w?.close());

  test('another writer pushes between fetch and push: pawl retries on the new head and both commits land', async () => {
    let other: string | null = null;
    w.git.beforePush(w.repoName, async ({ count }) => {
      if (count !== 1) return;
      other = await w.git.commitFiles(
        w.repoName,
        'main',
        { 'notes.txt': 'someone else was here\n' },
        { message: 'Another writer' },
      );
    });
    const { json, code, stderr } = await w.pawlJson<RunReport>(['run']);
    w.git.beforePush(w.repoName, null);
    assert.equal(code, 0, stderr);
    assert.equal(json.automations[0]!.result, 'pushed', json.automations[0]!.error ?? '');
    assert.ok(other, 'the other writer committed');
    const log = await w.git.log(w.repoName, 'main');
    assert.equal(log[0]!.sha, json.automations[0]!.commit);
    assert.deepEqual(log[0]!.parents, [other]);
    assert.equal(await w.git.show(w.repoName, 'main', 'notes.txt'), 'someone else was here\n');
    assert.match(await w.git.show(w.repoName, 'main', 'deploy.yaml'), /org\/app:1\.1\.0 /);
  });
});

describe('git failures', () => {
  let w: World;
  before(async () => (w = await world()));
  after(() => w?.close());

  test('bad credentials: exit 1, an authentication error without the password, nothing pushed', async () => {
    w.git.setUser('flux', 'another-password');
    const r = await w.pawlJson<RunReport>(['run']);
    w.git.setUser('flux', GIT_PASSWORD);
    assert.equal(r.code, 1);
    const a = r.json.automations[0]!;
    assert.equal(a.result, 'failed');
    assert.match(a.error ?? '', /auth/i);
    // Issue 23, item 7: the object, its URL and Secret, and what to do; not git's command line.
    assert.match(
      a.error ?? '',
      /^GitRepository \S+ \(http:\/\/127\.0\.0\.1:\d+\/\S+\): authentication failed with the credentials of Secret \S+; check "username" and "password"/,
    );
    assert.ok(!/git -c|credential\.helper/.test(a.error ?? ''), a.error ?? '');
    assert.ok(!JSON.stringify(r.json).includes(GIT_PASSWORD));
    assert.ok(!r.stderr.includes(GIT_PASSWORD));
  });

  test('a protected branch: exit 1, the rejection said, and the next run can use the workspace', async () => {
    await w.git.protectBranch(w.repoName, 'main');
    const r = await w.pawlJson<RunReport>(['run']);
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.json.automations[0]!.result, 'failed');
    assert.match(r.json.automations[0]!.error ?? '', /rejected \(protected\)/);
    await rm(join(w.git.repoPath(w.repoName), 'hooks', 'pre-receive'));
    const again = await w.pawlJson<RunReport>(['run']);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.json.automations[0]!.result, 'pushed');
    assert.match(await w.git.show(w.repoName, 'main', 'deploy.yaml'), /org\/app:1\.1\.0 /);
  });

  test('an unreachable git server: exit 1 with a clear error; the next run against a live server succeeds', async () => {
    await w.writeConfig('git.yaml', gitObjects().replace(/url: .*/, 'url: http://127.0.0.1:9/fleet.git'));
    const r = await w.pawlJson<RunReport>(['run']);
    assert.equal(r.code, 1);
    assert.equal(r.json.automations[0]!.result, 'failed');
    assert.match(r.json.automations[0]!.error ?? '', /unreachable|connect|refused/i);
    await w.writeConfig('git.yaml', gitObjects());
    await pushTags(w.registry.url, 'org/app', ['1.2.0']);
    const again = await w.pawlJson<RunReport>(['run', '--refresh']);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.json.automations[0]!.result, 'pushed');
  });
});
