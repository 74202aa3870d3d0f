/**
 * The realistic fleet (test/helpers/fleet.ts) end to end, on loopback: a real registry, the
 * smart-HTTP git server with Basic auth, a checkout of the fleet as the configuration, and the
 * bootstrap Secret outside Git in a --secrets-dir. One pawl per cluster directory: each pushes
 * its own overlay's new tags; production's broken automation is reported with file:line and
 * skipped while the good one runs; the repository root reports the clusters' real conflict.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pushTags } from '../helpers/push.js';
import { GIT_PASSWORD, GIT_USER, runCli, startWorld, type World } from '../helpers/world.js';
import { runGit } from '../helpers/git-server.js';
import { LEGACY_AUTOMATION, fleetFiles } from '../helpers/fleet.js';
import { lineOf } from '../config/fixtures.js';
import type { RunReport } from '../../src/run/report.js';

interface Output extends RunReport {
  problems: { file: string; line: number | null; object: string | null; severity: string; message: string }[];
  skipped: { kind: string; name: string; file: string; line: number | null; reason: string }[];
}

describe('a multi-cluster fleet repository, one pawl per cluster', () => {
  let w: World;
  let base: string;
  let checkout: string;
  let secrets: string;
  const R = () => w.registryHost;

  before(async () => {
    w = await startWorld({ files: fleetFiles(), config: {} });
    await pushTags(w.registry.url, 'apps/podinfo', ['1.0.0', '1.1.0', '1.2.0', '2.0.0', '2.1.0-rc.1']);
    await pushTags(w.registry.url, 'apps/worker', ['100', '150', '200']);
    base = await mkdtemp(join(tmpdir(), 'pawl-fleet-e2e-'));
    checkout = join(base, 'fleet');
    await runGit(['clone', '--quiet', w.git.repoPath(w.repoName), checkout], base);
    // The bootstrap Secret never lives in Git: mounted the way Kubernetes would.
    secrets = join(base, 'secrets');
    await mkdir(join(secrets, 'flux-system', 'flux-system'), { recursive: true });
    await writeFile(join(secrets, 'flux-system', 'flux-system', 'username'), GIT_USER);
    await writeFile(join(secrets, 'flux-system', 'flux-system', 'password'), GIT_PASSWORD);
  });
  after(async () => {
    await w?.close();
    if (base) await rm(base, { recursive: true, force: true });
  });

  const run = async (cluster: string): Promise<{ json: Output; code: number; stderr: string }> => {
    const r = await runCli([
      'run',
      '-c',
      join(checkout, 'clusters', cluster),
      '--secrets-dir',
      secrets,
      '--state-dir',
      join(base, `state-${cluster}`),
      '--json',
    ]);
    let json: Output;
    try {
      json = JSON.parse(r.stdout) as Output;
    } catch {
      throw new Error(`no JSON (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
    }
    return { json, code: r.code, stderr: r.stderr };
  };

  test('production: the good automation pushes its overlay; the broken one is reported and skipped (exit 1)', async () => {
    const { json, code, stderr } = await run('production');
    assert.equal(code, 1, stderr);
    assert.deepEqual(
      json.automations.map((a) => [a.name, a.result, a.error]),
      [['flux-system/production', 'pushed', null]],
    );
    const a = json.automations[0]!;
    assert.deepEqual(a.changes.map((c) => [c.file, c.old, c.new]).sort(), [
      ['apps/production/kustomization.yaml', '1.0.0', '1.2.0'],
      ['apps/production/worker-patch.yaml', `${R()}/apps/worker:100`, `${R()}/apps/worker:200`],
    ]);
    const legacy = join(checkout, 'clusters/production/legacy-automation.yaml');
    assert.deepEqual(json.skipped, [
      {
        kind: 'ImageUpdateAutomation',
        name: 'flux-system/legacy',
        file: legacy,
        line: 1,
        reason: 'invalid',
        dependsOn: null,
        message: (json.skipped[0] as { message?: string }).message,
      },
    ]);
    const err = json.problems.filter((p) => p.severity === 'error');
    assert.deepEqual(
      err.map((p) => [p.file, p.line, p.object]),
      [[legacy, lineOf(LEGACY_AUTOMATION, 'messageTemplate'), 'ImageUpdateAutomation flux-system/legacy']],
    );
    assert.match(
      stderr,
      new RegExp(`pawl: ${legacy}:${lineOf(LEGACY_AUTOMATION, 'messageTemplate')}: .*'\\.Updated'`),
    );
    // kustomize's own notes (patchesStrategicMerge is deprecated) are not pawl's words.
    assert.doesNotMatch(stderr, /patchesStrategicMerge/);

    const [head] = await w.git.log(w.repoName, 'main');
    assert.equal(head!.subject, '[ci skip] update production images');
    assert.match(
      await w.git.show(w.repoName, 'main', 'apps/production/kustomization.yaml'),
      /newTag: 1\.2\.0 #/,
    );
    assert.match(
      await w.git.show(w.repoName, 'main', 'apps/staging/kustomization.yaml'),
      /newTag: 1\.0\.0 #/,
    );
    const pushes = w.git.requests.filter((r) => r.path.endsWith('git-receive-pack'));
    assert.ok(pushes.length > 0 && pushes.every((r) => r.user === GIT_USER));
  });

  test('staging: its own substitutions and patch (release candidates) apply; nothing is skipped (exit 0)', async () => {
    const { json, code, stderr } = await run('staging');
    assert.equal(code, 0, stderr);
    assert.deepEqual(json.skipped, []);
    assert.deepEqual(
      json.policies.map((p) => [p.name, p.candidate]),
      [
        ['flux-system/podinfo', '2.1.0-rc.1'],
        ['flux-system/worker', '200'],
      ],
    );
    assert.deepEqual(
      json.automations.map((a) => [a.name, a.result]),
      [['flux-system/staging', 'pushed']],
    );
    assert.match(
      await w.git.show(w.repoName, 'main', 'apps/staging/kustomization.yaml'),
      /newTag: 2\.1\.0-rc\.1 #/,
    );
    // Production's values stay as its own run left them.
    assert.match(
      await w.git.show(w.repoName, 'main', 'apps/production/kustomization.yaml'),
      /newTag: 1\.2\.0 #/,
    );
  });

  test('the repository root: every object loads, and the clusters conflicting policy is named with both builds', async () => {
    const r = await runCli(['validate', '-c', checkout, '--secrets-dir', secrets]);
    assert.equal(r.code, 2, r.stderr);
    assert.doesNotMatch(r.stdout, /GitRepository .* defined twice/);
    assert.match(
      r.stdout,
      /ImagePolicy flux-system\/podinfo is defined twice, differently \(here as built from .*apps\/staging\) \(also at .*apps\/base\/podinfo\/image-policy\.yaml:1 as built from .*apps\/production\)/,
    );
    assert.match(r.stdout, /skipped: needs ImagePolicy flux-system\/podinfo/);
    assert.equal(r.stderr, '');
  });
});
