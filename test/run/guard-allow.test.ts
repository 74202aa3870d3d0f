/**
 * Flux's behaviour on demand: the DOWNGRADE case of Flux's own tables (6.7.1 → 6.7.0 after an
 * exclusion). With `downgrades: Allow` pawl writes 6.7.0 as Flux does; by default it blocks it
 * and `pawl explain` says how to roll back on purpose.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pushTags } from '../helpers/push.js';
import { gitObjects, startWorld, ROOT, type World } from '../helpers/world.js';
import type { RunReport } from '../../src/run/report.js';

interface PolicyCase {
  label: string;
  policy: { semver: { range: string } };
  filterTags: { pattern: string };
  tags: string[];
  expected: string;
}
const dir = process.env.PAWL_CONFORMANCE_DIR ?? join(ROOT, '..', 'shared', 'conformance', 'flux');
const cases = (
  JSON.parse(readFileSync(join(dir, 'policy-cases.json'), 'utf8')) as { cases: PolicyCase[] }
).cases.filter((c) => c.label.startsWith('DOWNGRADE'));
const [step1, step2] = cases as [PolicyCase, PolicyCase];

const objects = (exclusion: string | null, guard: string) => `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata:
  name: podinfo
  namespace: flux-system
spec:
  image: {{REGISTRY}}/stefanprodan/podinfo
  interval: 1m
${exclusion ? `  exclusionList:\n    - '${exclusion}'\n` : ''}---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata:
  name: podinfo
  namespace: flux-system
spec:
  imageRepositoryRef:
    name: podinfo
  filterTags:
    pattern: '${step1.filterTags.pattern}'
  policy:
    semver:
      range: '${step1.policy.semver.range}'
${guard}`;

const deploy = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
spec:
  template:
    spec:
      containers:
        - name: podinfo
          image: {{REGISTRY}}/stefanprodan/podinfo:6.6.0 # {"$imagepolicy": "flux-system:podinfo"}
`;

async function scenario(guard: string): Promise<{ w: World; second: RunReport }> {
  const w = await startWorld({
    files: { 'deploy.yaml': deploy },
    config: { 'git.yaml': gitObjects(), 'podinfo.yaml': objects(null, guard) },
  });
  // Distinct build times: 6.6.0 does not pass the filter, so only build times can order it.
  await pushTags(w.registry.url, 'stefanprodan/podinfo', ['6.6.0', ...step1.tags], {
    createdFor: (_t, i) => new Date(Date.UTC(2024, i, 1)),
  });
  const first = await w.pawlJson<RunReport>(['run']);
  assert.equal(first.json.policies[0]!.candidate, step1.expected, first.stderr);
  assert.equal(first.json.automations[0]!.result, 'pushed', JSON.stringify(first.json.automations[0]));
  // Step 2 of Flux's test: the newest tag is excluded on purpose.
  await w.writeConfig('podinfo.yaml', objects(String.raw`^6\.7\.1$`, guard));
  const second = await w.pawlJson<RunReport>(['run', '--refresh']);
  assert.equal(second.code, 0, second.stderr);
  assert.equal(second.json.policies[0]!.candidate, step2.expected);
  return { w, second: second.json };
}

describe('downgrades: Allow behaves as Flux', () => {
  let w: World | undefined;
  after(() => w?.close());
  test('6.7.1 → 6.7.0 is written', async () => {
    const s = await scenario('  guard:\n    downgrades: Allow\n');
    w = s.w;
    assert.equal(s.second.automations[0]!.result, 'pushed');
    assert.match(await s.w.git.show(s.w.repoName, 'main', 'deploy.yaml'), /podinfo:6\.7\.0 /);
  });
});

describe('by default the downgrade is blocked', () => {
  let w: World | undefined;
  before(() => undefined);
  after(() => w?.close());
  test('6.7.1 is kept, and explain says how to roll back on purpose', async () => {
    const s = await scenario('');
    w = s.w;
    const a = s.second.automations[0]!;
    assert.equal(a.result, 'up-to-date');
    assert.equal(a.kept[0]!.reason, 'downgrade-blocked');
    assert.match(await s.w.git.show(s.w.repoName, 'main', 'deploy.yaml'), /podinfo:6\.7\.1 /);
    const explain = await s.w.pawl(['explain', 'podinfo']);
    assert.equal(explain.code, 0, explain.stderr);
    assert.match(explain.stdout, /downgrade blocked/);
    assert.match(explain.stdout, /pawl rollback flux-system\/podinfo --to 6\.7\.0/);
  });
});
