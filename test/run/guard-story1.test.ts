/**
 * SPEC §1 problem 1, exactly: a person commits a newer tag by hand over the automation's
 * `…-123`; pawl keeps it (`downgrade-blocked`) — once where the policy can order the person's
 * tag, once where only build times can.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pushTags } from '../helpers/push.js';
import { gitObjects, imageObjects, startWorld, type World } from '../helpers/world.js';
import type { RunReport } from '../../src/run/report.js';

const deploy = (tag: string) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: service
spec:
  template:
    spec:
      containers:
        - name: service
          image: {{REGISTRY}}/team/service:${tag} # {"$imagepolicy": "flux-system:service"}
`;

const POLICY = imageObjects('service', '{{REGISTRY}}/team/service', 'numerical:\n  order: asc', {
  filterTags: "pattern: '^service-main-[a-f0-9]+-(?P<ts>[0-9]+)$'\nextract: '$ts'",
  interval: '1h',
});

const day = (d: number) => new Date(Date.UTC(2024, 0, d));

async function world(): Promise<World> {
  const w = await startWorld({
    files: { 'deploy.yaml': deploy('service-main-aaa1111-120') },
    config: { 'git.yaml': gitObjects(), 'service.yaml': POLICY },
  });
  await pushTags(w.registry.url, 'team/service', ['service-main-aaa1111-120', 'service-main-bbb2222-123'], {
    createdFor: (_t, i) => day(i + 1),
  });
  // The automation moves the line to …-123, as it should.
  const first = await w.pawlJson<RunReport>(['run']);
  assert.equal(first.json.automations[0]!.result, 'pushed', first.stderr);
  assert.match(await w.git.show(w.repoName, 'main', 'deploy.yaml'), /service-main-bbb2222-123/);
  return w;
}

describe('a person commits a newer tag by hand (SPEC §1 problem 1)', () => {
  let w: World;
  before(async () => (w = await world()));
  after(() => w?.close());

  test('the policy orders the person’s tag, though the last scan predates it: kept, downgrade-blocked', async () => {
    await pushTags(w.registry.url, 'team/service', ['service-main-ccc3333-124'], {
      createdFor: () => day(10),
    });
    await w.git.commitFiles(
      w.repoName,
      'main',
      { 'deploy.yaml': deploy('service-main-ccc3333-124').replaceAll('{{REGISTRY}}', w.registryHost) },
      {
        message: 'Deploy my hotfix build',
        author: { name: 'Dana Dev', email: 'dana@example.com' },
      },
    );
    const commits = (await w.git.log(w.repoName, 'main')).length;
    // The repository is not due (interval 1h): the candidate is still …-123 from the last scan.
    const { json, code, stderr } = await w.pawlJson<RunReport>(['run']);
    assert.equal(code, 0, stderr);
    assert.equal(json.repositories[0]!.scanned, false);
    assert.equal(json.policies[0]!.candidate, 'service-main-bbb2222-123');
    const a = json.automations[0]!;
    assert.equal(a.result, 'up-to-date');
    assert.deepEqual(a.changes, []);
    assert.equal(a.kept.length, 1);
    assert.equal(a.kept[0]!.reason, 'downgrade-blocked');
    assert.equal(a.kept[0]!.current, `${w.registryHost}/team/service:service-main-ccc3333-124`);
    assert.match(a.kept[0]!.detail, /numerical/);
    assert.equal((await w.git.log(w.repoName, 'main')).length, commits, 'no commit');
    assert.match(await w.git.show(w.repoName, 'main', 'deploy.yaml'), /service-main-ccc3333-124/);
  });
});

describe('a person commits a manual build only build times can order (SPEC §1 problem 1)', () => {
  let w: World;
  before(async () => (w = await world()));
  after(() => w?.close());

  test('manual-service-main-<sha>-124 is kept, downgrade-blocked by build time', async () => {
    await pushTags(w.registry.url, 'team/service', ['manual-service-main-ddd4444-124'], {
      createdFor: () => day(10),
    });
    await w.git.commitFiles(
      w.repoName,
      'main',
      { 'deploy.yaml': deploy('manual-service-main-ddd4444-124').replaceAll('{{REGISTRY}}', w.registryHost) },
      {
        message: 'Try my manual build',
        author: { name: 'Dana Dev', email: 'dana@example.com' },
      },
    );
    const commits = (await w.git.log(w.repoName, 'main')).length;
    const { json, code, stderr } = await w.pawlJson<RunReport>(['run', '--refresh']);
    assert.equal(code, 0, stderr);
    assert.equal(json.policies[0]!.candidate, 'service-main-bbb2222-123');
    const a = json.automations[0]!;
    assert.equal(a.result, 'up-to-date');
    assert.equal(a.kept[0]!.reason, 'downgrade-blocked');
    assert.match(a.kept[0]!.detail, /build time/);
    assert.equal((await w.git.log(w.repoName, 'main')).length, commits, 'no commit');
  });
});
