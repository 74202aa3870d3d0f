/**
 * `pawl suspend|resume` on a checkout of the fleet repository (-c points into it): the field is
 * spliced into the object's file in pawl's workspace of the GitRepository, committed as the
 * automation's author with a trailer and pushed; a pull brings it to the checkout, where
 * `pawl get` shows it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runGit } from '../helpers/git-server.js';
import { gitObjects, imageObjects, runCli, startWorld, type World } from '../helpers/world.js';

const DEPLOY = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    spec:
      containers:
        - name: app
          image: {{REGISTRY}}/team/app:1.0.0 # {"$imagepolicy": "flux-system:app"}
`;

describe('pawl suspend and resume', () => {
  let world: World;
  let base: string;
  let checkout: string;
  const pawl = (args: string[]) =>
    runCli([...args, '-c', join(checkout, 'clusters'), '--state-dir', join(base, 'state')]);
  before(async () => {
    world = await startWorld({
      files: {
        'apps/app.yaml': DEPLOY,
        'clusters/git.yaml': gitObjects({ path: './apps' }),
        'clusters/app.yaml': imageObjects('app', '{{REGISTRY}}/team/app', 'semver:\n  range: ">=1.0.0"'),
      },
      config: {},
    });
    base = await mkdtemp(join(tmpdir(), 'pawl-suspend-'));
    checkout = join(base, 'fleet');
    await runGit(['clone', '--quiet', world.git.repoPath(world.repoName), checkout], base);
  });
  after(async () => {
    await world?.close();
    await rm(base, { recursive: true, force: true });
  });

  test('suspend automation commits one line into its file and pushes it; get shows it after a pull', async () => {
    const before = await readFile(join(checkout, 'clusters/git.yaml'), 'utf8');
    const r = await pawl(['suspend', 'automation', 'fleet', '--reason', 'freeze for the release']);
    assert.equal(r.code, 0, r.stderr);
    const sha = /committed ([0-9a-f]{12}) \(clusters\/git\.yaml:(\d+)\) and pushed it to main/.exec(r.stdout);
    assert.ok(sha, r.stdout);
    const [head] = await world.git.log(world.repoName, 'main');
    assert.ok(head!.sha.startsWith(sha[1]!));
    assert.equal(head!.subject, 'Suspend ImageUpdateAutomation flux-system/fleet');
    assert.match(head!.body, /^Pawl-Suspend: ImageUpdateAutomation flux-system\/fleet$/m);
    assert.match(head!.body, /^Pawl-Reason: freeze for the release$/m);
    assert.equal(head!.authorName, 'pawl-bot');
    const after = await world.git.show(world.repoName, head!.sha, 'clusters/git.yaml');
    // Exactly one line more, at spec's indentation; every other byte as it was.
    const lines = after.split('\n');
    const at = Number(sha[2]) - 1;
    assert.equal(lines[at], '  suspend: true');
    assert.equal([...lines.slice(0, at), ...lines.slice(at + 1)].join('\n'), before);

    await runGit(['pull', '--quiet', '--ff-only'], checkout);
    const get = await pawl(['get', 'automations']);
    assert.equal(get.code, 0, get.stderr);
    assert.match(get.stdout, /^flux-system\s+fleet\s+-\s+True\s+Unknown\s+no recorded run$/m);
    // A second suspend changes nothing and says so.
    const again = await pawl(['suspend', 'automation', 'flux-system/fleet']);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /already has spec\.suspend: true/);
    assert.equal((await world.git.log(world.repoName, 'main'))[0]!.sha, head!.sha);
  });

  test('resume removes the line again; suspend policy and repository splice their own files', async () => {
    const r = await pawl(['resume', 'automation', 'fleet']);
    assert.equal(r.code, 0, r.stderr);
    const [head] = await world.git.log(world.repoName, 'main');
    assert.equal(head!.subject, 'Resume ImageUpdateAutomation flux-system/fleet');
    assert.doesNotMatch(await world.git.show(world.repoName, head!.sha, 'clusters/git.yaml'), /suspend/);
    const p = await pawl(['suspend', 'policy', 'app']);
    assert.equal(p.code, 0, p.stderr);
    const repo = await pawl(['suspend', 'repository', 'app']);
    assert.equal(repo.code, 0, repo.stderr);
    const app = await world.git.show(world.repoName, 'main', 'clusters/app.yaml');
    assert.equal(app.match(/^ {2}suspend: true$/gm)?.length, 2);
    await runGit(['pull', '--quiet', '--ff-only'], checkout);
    const get = await pawl(['get', 'all', '--json']);
    const rows = JSON.parse(get.stdout) as {
      repositories: { suspended: boolean }[];
      policies: { suspended: boolean }[];
      automations: { suspended: boolean }[];
    };
    assert.deepEqual(
      [rows.repositories[0]!.suspended, rows.policies[0]!.suspended, rows.automations[0]!.suspended],
      [true, true, false],
    );
  });

  test('an object outside any Git checkout is refused with what to do (exit 2)', async () => {
    await world.writeConfig('git.yaml', gitObjects());
    const r = await world.pawl(['suspend', 'automation', 'fleet']);
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      /ImageUpdateAutomation flux-system\/fleet is defined in \S+git\.yaml, which is not in a Git checkout: .*set spec\.suspend there by hand/,
    );
    const missing = await pawl(['resume', 'repository', 'nope']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /nope/);
  });
});
