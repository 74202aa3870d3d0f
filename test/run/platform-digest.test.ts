/**
 * `spec.digest.platform`: a marker's digest (`name:tag@digest`, as `:digest` lines) is one platform's manifest digest from a real
 * multi-arch OCI index in the registry, where Flux (and pawl by default) writes the index's.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pushImage } from '../helpers/push.js';
import { gitObjects, imageObjects, markedValues, startWorld, type World } from '../helpers/world.js';
import type { RunReport } from '../../src/run/report.js';

const objects = (digest: string) =>
  imageObjects('app', '{{REGISTRY}}/org/app', "semver:\n  range: '>=1.0.0'", {
    spec: `digestReflectionPolicy: IfNotPresent\n${digest}`,
  });

describe('digest of one platform', () => {
  const worlds: World[] = [];
  after(() => Promise.all(worlds.map((w) => w.close())));

  for (const [label, spec, pick] of [
    ['platform: linux/arm64 writes the arm64 manifest', 'digest:\n  platform: linux/arm64\n', 'arm64'],
    ['by default the index digest is written, as Flux does', '', 'index'],
  ] as const) {
    test(label, async () => {
      const w = await startWorld({
        files: { 'values.yaml': markedValues('1.0.0') },
        config: { 'git.yaml': gitObjects(), 'app.yaml': objects(spec) },
      });
      worlds.push(w);
      const pushed = await pushImage(w.registry.url, 'org/app', '1.1.0', { index: true });
      const want =
        pick === 'index' ? pushed.digest : pushed.children!.find((c) => c.platform === 'linux/arm64')!.digest;
      if (pick !== 'index') assert.notEqual(want, pushed.digest);
      const run = await w.pawlJson<RunReport>(['run']);
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.json.automations[0]!.result, 'pushed', JSON.stringify(run.json.automations[0]));
      const file = await w.git.show(w.repoName, 'main', 'values.yaml');
      assert.match(file, new RegExp(String.raw`/org/app:1\.1\.0@${want} `), file);
    });
  }
});
