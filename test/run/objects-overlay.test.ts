/**
 * `.Changed.Objects` end to end when one object is in two files, a kustomize base and an
 * overlay patch: Flux 1.2.0 and later list both files' changes under that object.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FLUX_DOC_OBJECTS_TEMPLATE } from '../helpers/flux-templates.js';
import { pushTags } from '../helpers/push.js';
import { gitObjects, imageObjects, startWorld, type World } from '../helpers/world.js';
import type { RunReport } from '../../src/run/report.js';

const FILES: Record<string, string> = {
  'base/deployment.yaml': `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
  namespace: default
spec:
  template:
    spec:
      containers:
        - name: podinfo
          image: {{REGISTRY}}/apps/podinfo:1.0.0 # {"$imagepolicy": "flux-system:podinfo"}
`,
  'overlays/prod/deployment.yaml': `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
  namespace: default
spec:
  template:
    spec:
      containers:
        - name: sidecar
          image: {{REGISTRY}}/apps/sidecar:2.0.0 # {"$imagepolicy": "flux-system:sidecar"}
`,
};

describe('.Changed.Objects with a base and an overlay', () => {
  let w: World;
  before(async () => {
    w = await startWorld({
      files: FILES,
      config: {
        'git.yaml': gitObjects({ messageTemplate: FLUX_DOC_OBJECTS_TEMPLATE }),
        'podinfo.yaml': imageObjects('podinfo', '{{REGISTRY}}/apps/podinfo', 'semver:\n  range: ">=1.0.0"'),
        'sidecar.yaml': imageObjects('sidecar', '{{REGISTRY}}/apps/sidecar', 'semver:\n  range: ">=2.0.0"'),
      },
    });
    await pushTags(w.registry.url, 'apps/podinfo', ['1.0.0', '1.1.0']);
    await pushTags(w.registry.url, 'apps/sidecar', ['2.0.0', '2.1.0']);
  });
  after(() => w?.close());

  test("the commit message lists both files' changes under the one Deployment", async () => {
    const { json, code, stderr } = await w.pawlJson<RunReport>(['run']);
    assert.equal(code, 0, stderr);
    assert.equal(json.automations[0]?.result, 'pushed', json.automations[0]?.error ?? '');
    const [head] = await w.git.log(w.repoName, 'main');
    const R = w.registryHost;
    const body = head!.body;
    assert.equal(
      body.slice(body.indexOf('Objects:'), body.indexOf('\nPawl-')).trimEnd(),
      'Objects:\n' +
        '- Deployment podinfo\n' +
        '  Changes:\n' +
        `    - ${R}/apps/podinfo:1.0.0 -> ${R}/apps/podinfo:1.1.0\n` +
        '\n' +
        `    - ${R}/apps/sidecar:2.0.0 -> ${R}/apps/sidecar:2.1.0`,
    );
  });
});
