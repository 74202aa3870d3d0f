/**
 * pawl's `policy.newestBuild`: the tag whose image was built last wins, whatever its name.
 * Build times are read from the registry and cached by digest.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pushTags } from '../helpers/push.js';
import { gitObjects, imageObjects, startWorld, type World } from '../helpers/world.js';
import type { RunReport } from '../../src/run/report.js';

const deploy = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: tool
spec:
  template:
    spec:
      containers:
        - name: tool
          image: {{REGISTRY}}/org/tool:blue # {"$imagepolicy": "flux-system:tool"}
`;

describe('policy.newestBuild', () => {
  let w: World;
  before(async () => {
    w = await startWorld({
      proxy: true,
      files: { 'deploy.yaml': deploy },
      config: {
        'git.yaml': gitObjects(),
        'tool.yaml': imageObjects('tool', '{{REGISTRY}}/org/tool', 'newestBuild: {}'),
      },
    });
    const built: Record<string, string> = { blue: '2024-01-01', green: '2024-03-01', red: '2024-02-01' };
    await pushTags(w.registry.url, 'org/tool', Object.keys(built), {
      createdFor: (t) => new Date(built[t]!),
    });
  });
  after(() => w?.close());

  test('selects the newest build and writes it', async () => {
    const { json, code, stderr } = await w.pawlJson<RunReport>(['run']);
    assert.equal(code, 0, stderr);
    assert.equal(json.policies[0]!.candidate, 'green');
    assert.equal(json.automations[0]!.result, 'pushed');
    assert.match(await w.git.show(w.repoName, 'main', 'deploy.yaml'), /org\/tool:green /);
  });

  test('an older build pushed later is not an upgrade, and known build times are not fetched again', async () => {
    await pushTags(w.registry.url, 'org/tool', ['yellow'], { createdFor: () => new Date('2023-06-01') });
    w.proxy!.resetCounts();
    const { json } = await w.pawlJson<RunReport>(['run', '--refresh']);
    assert.equal(json.policies[0]!.candidate, 'green');
    assert.equal(json.automations[0]!.result, 'up-to-date');
    // Only the new tag's image is read: one manifest GET (its config blob follows).
    assert.equal(w.proxy!.count('manifest-get'), 1);
    assert.equal(w.proxy!.count('blob'), 1);
  });
});
