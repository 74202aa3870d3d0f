/**
 * A marked file in the repository that is a symbolic link out of it: `pawl run` does not follow
 * it, and says so once, in words, on stderr (and in the --json report), not as a log line.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pushTags } from '../helpers/push.js';
import { runGit } from '../helpers/git-server.js';
import { gitObjects, imageObjects, startWorld, type World } from '../helpers/world.js';
import type { RunReport } from '../../src/run/report.js';

describe('a symlink out of the repository', () => {
  let w: World;
  let outside: string;
  before(async () => {
    w = await startWorld({
      files: { 'deploy.yaml': 'image: {{REGISTRY}}/org/app:1.0.0 # {"$imagepolicy": "flux-system:app"}\n' },
      config: {
        'git.yaml': gitObjects(),
        'app.yaml': imageObjects('app', '{{REGISTRY}}/org/app', 'semver:\n  range: ">=1.0.0"'),
      },
    });
    outside = await mkdtemp(join(tmpdir(), 'pawl-outside-'));
    const target = join(outside, 'secret.yaml');
    await writeFile(target, `image: ${w.registryHost}/org/app:1.0.0 # {"$imagepolicy": "flux-system:app"}\n`);
    // Commit the link with the git CLI, as a person would.
    const clone = join(outside, 'clone');
    await runGit(['clone', '--quiet', w.git.repoPath(w.repoName), clone], outside);
    await symlink(target, join(clone, 'evil.yaml'));
    await runGit(['add', 'evil.yaml'], clone);
    await runGit(['-c', 'user.name=P', '-c', 'user.email=p@example.com', 'commit', '-qm', 'link'], clone);
    await runGit(['push', '--quiet', 'origin', 'HEAD:main'], clone);
    await pushTags(w.registry.url, 'org/app', ['1.0.0', '1.1.0']);
  });
  after(async () => {
    await w?.close();
    if (outside) await rm(outside, { recursive: true, force: true });
  });

  test('warned once, in words; the link is not followed; the rest is written', async () => {
    const r = await w.pawl(['run', '--dry-run']);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stderr.split('\n').filter((l) => l.includes('evil.yaml'));
    assert.equal(lines.length, 1, r.stderr);
    assert.match(
      lines[0]!,
      /^pawl: warning: automation flux-system\/fleet: evil\.yaml: is a symbolic link to .*secret\.yaml, outside the repository; pawl does not follow it/,
    );

    const { json, code } = await w.pawlJson<RunReport>(['run']);
    assert.equal(code, 0);
    const a = json.automations[0]!;
    assert.equal(a.result, 'pushed', a.error ?? '');
    assert.deepEqual(
      a.warnings?.map((x) => x.file),
      ['evil.yaml'],
    );
    assert.deepEqual(
      a.changes.map((c) => c.file),
      ['deploy.yaml'],
    );
  });
});
