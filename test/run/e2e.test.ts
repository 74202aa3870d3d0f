/**
 * The main job end to end, on loopback: a real registry, a smart-HTTP git server with Basic
 * auth, Flux objects, one `pawl run` that pushes one commit touching only the marked scalars,
 * and a second run that finds everything up to date.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pushTags } from '../helpers/push.js';
import { gitObjects, imageObjects, startWorld, type World } from '../helpers/world.js';
import type { RunReport } from '../../src/run/report.js';
import { FLUX_DOC_OBJECTS_TEMPLATE } from '../helpers/flux-templates.js';

const FILES: Record<string, string> = {
  'apps/podinfo/deploy.yaml': `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
  namespace: apps
spec:
  template:
    spec:
      containers:
        - name: podinfo
          image: {{REGISTRY}}/apps/podinfo:1.0.0 # {"$imagepolicy": "flux-system:podinfo"}

        # a comment and a blank line above must survive
        - name: sidecar
          image: "{{REGISTRY}}/apps/worker:100" # {"$imagepolicy": "flux-system:worker"}
        - name: unmarked
          image: {{REGISTRY}}/apps/podinfo:1.0.0
`,
  'apps/podinfo/kustomization.yaml': `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [deploy.yaml]
images:
  - name: podinfo
    newName: {{REGISTRY}}/apps/podinfo # {"$imagepolicy": "flux-system:podinfo:name"}
    newTag: 1.0.0 # {"$imagepolicy": "flux-system:podinfo:tag"}
`,
  'apps/worker/values.yaml': `# Helm values\r\nimage:\r\n  repository: {{REGISTRY}}/apps/worker # {"$imagepolicy": "flux-system:worker:name"}\r\n  tag: '100' # {"$imagepolicy": "flux-system:worker:tag"}\r\n`,
  'apps/worker/cronjob.yaml': `apiVersion: batch/v1
kind: CronJob
metadata:
  name: worker
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          containers:
            - name: worker
              image: {{REGISTRY}}/apps/worker:100 # {"$imagepolicy": "flux-system:worker"}
`,
  'README.md': 'not a manifest {"$imagepolicy": "flux-system:podinfo"}\n',
};

describe('pawl run end to end', () => {
  let w: World;
  before(async () => {
    w = await startWorld({
      files: FILES,
      config: {
        'git.yaml': gitObjects({ messageTemplate: FLUX_DOC_OBJECTS_TEMPLATE }),
        'podinfo.yaml': imageObjects(
          'podinfo',
          '{{REGISTRY}}/apps/podinfo',
          'semver:\n  range: ">=1.0.0 <2.0.0"',
        ),
        'worker.yaml': imageObjects('worker', '{{REGISTRY}}/apps/worker', 'numerical:\n  order: asc'),
      },
    });
    await pushTags(w.registry.url, 'apps/podinfo', ['1.0.0', '1.1.0', '1.2.0', '2.0.0']);
    await pushTags(w.registry.url, 'apps/worker', ['100', '150', '200']);
  });
  after(() => w?.close());

  test('one run pushes one commit that touches only the marked scalars', async () => {
    const before = await w.git.log(w.repoName, 'main');
    const { json, code, stderr } = await w.pawlJson<RunReport>(['run']);
    assert.equal(code, 0, stderr);
    assert.deepEqual(
      json.repositories.map((r) => [r.name, r.tags, r.scanned, r.error]),
      [
        ['flux-system/podinfo', 4, true, null],
        ['flux-system/worker', 3, true, null],
      ],
    );
    assert.deepEqual(
      json.policies.map((p) => [p.name, p.candidate, p.highWater, p.error]),
      [
        ['flux-system/podinfo', '1.2.0', '1.2.0', null],
        ['flux-system/worker', '200', '200', null],
      ],
    );
    const [a] = json.automations;
    assert.ok(a);
    assert.equal(a.result, 'pushed', a.error ?? '');
    assert.equal(a.branch, 'main');
    assert.equal(a.changes.length, 5); // the two `:name` lines already name the image
    assert.ok(a.changes.every((c) => c.reason === 'upgrade'));
    assert.deepEqual(
      a.kept.filter((k) => k.reason !== 'up-to-date'),
      [],
    );

    const after = await w.git.log(w.repoName, 'main');
    assert.equal(after.length, before.length + 1, 'exactly one new commit');
    assert.equal(after[0]!.sha, a.commit);
    assert.equal(after[0]!.authorName, 'pawl-bot');
    const R0 = w.registryHost;
    assert.equal(after[0]!.subject, 'Automated image update');
    for (const expectedLine of [
      'Automation name: flux-system/fleet',
      '- apps/podinfo/deploy.yaml',
      '- apps/worker/cronjob.yaml',
      '- Deployment podinfo',
      '- CronJob worker',
      `    - ${R0}/apps/podinfo:1.0.0 -> ${R0}/apps/podinfo:1.2.0`,
      `    - ${R0}/apps/worker:100 -> ${R0}/apps/worker:200`,
      'Pawl-Automation: flux-system/fleet',
      'Pawl-Updated: flux-system/podinfo',
      'Pawl-Updated: flux-system/worker',
    ]) {
      assert.ok(
        after[0]!.body.split('\n').includes(expectedLine),
        `commit message has ${JSON.stringify(expectedLine)}:\n${after[0]!.body}`,
      );
    }

    const R = w.registryHost;
    const expected: Record<string, string> = {
      'apps/podinfo/deploy.yaml': FILES['apps/podinfo/deploy.yaml']!.replaceAll('{{REGISTRY}}', R)
        .replace(`${R}/apps/podinfo:1.0.0 #`, `${R}/apps/podinfo:1.2.0 #`)
        .replace(`"${R}/apps/worker:100"`, `"${R}/apps/worker:200"`),
      'apps/podinfo/kustomization.yaml': FILES['apps/podinfo/kustomization.yaml']!.replaceAll(
        '{{REGISTRY}}',
        R,
      ).replace('newTag: 1.0.0', 'newTag: 1.2.0'),
      'apps/worker/values.yaml': FILES['apps/worker/values.yaml']!.replaceAll('{{REGISTRY}}', R).replace(
        "tag: '100'",
        "tag: '200'",
      ),
      'apps/worker/cronjob.yaml': FILES['apps/worker/cronjob.yaml']!.replaceAll('{{REGISTRY}}', R).replace(
        'worker:100',
        'worker:200',
      ),
      'README.md': FILES['README.md']!,
    };
    for (const [file, text] of Object.entries(expected)) {
      assert.equal(await w.git.show(w.repoName, 'main', file), text, file);
    }
  });

  test('a second run is up to date and makes no commit', async () => {
    const before = await w.git.log(w.repoName, 'main');
    const { json, code } = await w.pawlJson<RunReport>(['run']);
    assert.equal(code, 0);
    assert.equal(json.automations[0]!.result, 'up-to-date');
    assert.equal(json.automations[0]!.changes.length, 0);
    assert.ok(json.automations[0]!.kept.every((k) => k.reason === 'up-to-date'));
    // Not due yet: the scans of the first run are fresh (reconcile through only when stale).
    assert.ok(json.repositories.every((r) => r.scanned === false));
    assert.equal((await w.git.log(w.repoName, 'main')).length, before.length);
  });

  test('--dry-run shows the diff of a new release and writes nothing', async () => {
    await pushTags(w.registry.url, 'apps/podinfo', ['1.3.0']);
    const before = await w.git.log(w.repoName, 'main');
    const r = await w.pawl(['run', '--dry-run', '--refresh']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /dry-run/);
    assert.match(r.stdout, /-\s+newTag: 1\.2\.0/);
    assert.match(r.stdout, /\+\s+newTag: 1\.3\.0/);
    assert.equal((await w.git.log(w.repoName, 'main')).length, before.length);
  });
});
