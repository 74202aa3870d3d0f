/**
 * Reviewers, assignees and draft on a real Gitea (issue 25): the pull request pawl opens is a
 * draft (`WIP:`), asks a second user (made through Gitea's admin API and given write access) to
 * review, and is assigned to both users; a user Gitea does not have is a note on the report,
 * and the pull request still stands.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGitea, type TestGitea } from '../helpers/gitea.js';
import { startRegistry, type TestRegistry } from '../helpers/registry.js';
import { pushTags } from '../helpers/push.js';
import { runCli } from '../helpers/world.js';
import type { RunReport } from '../../src/records/index.js';

interface GiteaPull {
  number: number;
  title: string;
  draft?: boolean;
  assignees: { login: string }[] | null;
  requested_reviewers: { login: string }[] | null;
}

const REVIEWER = 'rita';

describe('reviewers, assignees and draft on a real Gitea', () => {
  let gitea: TestGitea;
  let registry: TestRegistry;
  let base: string;
  let configDir: string;
  let stateDir: string;

  const config = (repo: string, url: string, people: string) => `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: { name: ${repo}, namespace: flux-system }
spec:
  interval: 1m
  url: ${url}
  ref: { branch: main }
  secretRef: { name: git }
---
apiVersion: image.pawl.dev/v1alpha1
kind: ImageUpdateAutomation
metadata: { name: ${repo}, namespace: flux-system }
spec:
  interval: 5m
  sourceRef: { kind: GitRepository, name: ${repo} }
  git:
    checkout: { ref: { branch: main } }
    commit:
      author: { name: pawl-bot, email: pawl@example.test }
    push:
      branch: 'pawl/{{ .AutomationObject.Name }}'
      pullRequest:
        provider: gitea
        secretRef: { name: gitea-token }
        title: 'Update app to {{ range .Changed.Changes }}{{ .NewValue }}{{ end }}'
        draft: true
${people}
  update: { path: ./, strategy: Setters }
`;

  const seed = async (repo: string): Promise<string> => {
    const url = await gitea.seed(repo, join(base, `person-${repo}`), {
      'app.yaml': `image: ${registry.host}/app\ntag: 1.0.0 # {"$imagepolicy": "flux-system:app:tag"}\n`,
    });
    await gitea.api('PUT', `/repos/${gitea.user}/${repo}/collaborators/${REVIEWER}`, { permission: 'write' });
    return url;
  };

  before(async () => {
    [gitea, registry] = await Promise.all([startGitea(), startRegistry({ auth: 'none' })]);
    base = await mkdtemp(join(tmpdir(), 'pawl-pr-people-'));
    configDir = join(base, 'config');
    stateDir = join(base, 'state');
    await mkdir(configDir);
    await gitea.api('POST', '/admin/users', {
      username: REVIEWER,
      email: `${REVIEWER}@example.test`,
      password: 'rita-password-1234',
      must_change_password: false,
    });
    const people = await seed('people');
    const unknown = await seed('unknown');
    await pushTags(registry.url, 'app', ['1.0.0', '1.1.0']);
    await writeFile(
      join(configDir, 'common.yaml'),
      `${gitea.secrets()}---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: { name: app, namespace: flux-system }
spec: { image: ${registry.host}/app, interval: 1m }
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: { name: app, namespace: flux-system }
spec:
  imageRepositoryRef: { name: app }
  policy: { semver: { range: ">=1.0.0" } }
`,
    );
    await writeFile(
      join(configDir, 'people.yaml'),
      config(
        'people',
        people,
        `        reviewers: [${REVIEWER}]\n        assignees: [${REVIEWER}, ${gitea.user}]`,
      ),
    );
    await writeFile(
      join(configDir, 'unknown.yaml'),
      config('unknown', unknown, '        reviewers: [nobody-here]'),
    );
  });

  after(async () => {
    await Promise.all([gitea?.close(), registry?.stop()]);
    if (base) await rm(base, { recursive: true, force: true });
  });

  test('opened as a draft, the second user asked to review, both users assigned; an unknown reviewer a note, the pull request standing', async () => {
    const r = await runCli(['run', '--refresh', '--json', '-c', configDir, '--state-dir', stateDir]);
    const report = JSON.parse(r.stdout) as RunReport;
    const of = (n: string) => report.automations.find((a) => a.name === `flux-system/${n}`)!;
    const a = of('people');
    assert.equal(a.error, null, r.stderr);
    assert.equal(a.pullRequest?.action, 'opened');
    assert.equal(a.pullRequest?.note, undefined);
    const pr = await gitea.api<GiteaPull>(
      'GET',
      `/repos/${gitea.user}/people/pulls/${a.pullRequest!.number}`,
    );
    assert.equal(pr.title, 'WIP: Update app to 1.1.0');
    assert.equal(pr.draft, true, 'Gitea reads the WIP: title as a draft');
    assert.deepEqual(
      (pr.requested_reviewers ?? []).map((u) => u.login),
      [REVIEWER],
    );
    assert.deepEqual((pr.assignees ?? []).map((u) => u.login).sort(), [gitea.user, REVIEWER].sort());

    const u = of('unknown');
    assert.equal(u.error, null, 'a reviewer Gitea lacks does not fail the pass');
    assert.equal(u.pullRequest?.action, 'opened');
    assert.match(
      u.pullRequest?.note ?? '',
      /^reviewers and assignees could not be set on #\d+: POST .*requested_reviewers: /,
    );
    assert.ok(!r.stdout.includes(gitea.token) && !r.stderr.includes(gitea.token));
  });
});
