/**
 * Pull requests against a real Gitea (issue 25): pawl pushes a branch named by the template over
 * Gitea's Git HTTP and opens, updates and closes real pull requests through its API; a person
 * merges, commits to the branch and sets a newer tag by hand, as a person would.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGitea, type TestGitea } from '../helpers/gitea.js';
import { startRegistry, type TestRegistry } from '../helpers/registry.js';
import { pushTags } from '../helpers/push.js';
import { runGit } from '../helpers/git-server.js';
import { runCli } from '../helpers/world.js';
import type { RunReport } from '../../src/records/index.js';

interface GiteaPull {
  number: number;
  title: string;
  body: string;
  state: string;
  merged: boolean;
  mergeable: boolean;
  head: { ref: string; sha: string };
  labels: { name: string }[];
}

const REPO = 'fleet';
const BRANCH = 'pawl/fleet/flux-system-app-tag';

describe('pull requests on a real Gitea', () => {
  let gitea: TestGitea;
  let registry: TestRegistry;
  let base: string;
  let configDir: string;
  let stateDir: string;
  let person: string;

  const pawlRun = async (): Promise<RunReport['automations'][number]> => {
    const r = await runCli(['run', '--refresh', '--json', '-c', configDir, '--state-dir', stateDir]);
    let report: RunReport;
    try {
      report = JSON.parse(r.stdout) as RunReport;
    } catch {
      throw new Error(`pawl run printed no JSON (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
    }
    assert.ok(!r.stderr.includes(gitea.token), 'the token is not in pawl’s output');
    assert.ok(!r.stdout.includes(gitea.token), 'the token is not in the report');
    return report.automations[0]!;
  };
  const openPulls = (): Promise<GiteaPull[]> =>
    gitea.api<GiteaPull[]>('GET', `/repos/${gitea.user}/${REPO}/pulls?state=open`);
  const fileOn = async (branch: string): Promise<string> => {
    await runGit(['fetch', '--quiet', 'origin'], person);
    return runGit(['show', `origin/${branch}:app.yaml`], person);
  };
  /** A person's commit on `branch`, pushed. */
  const personCommits = async (branch: string, file: string, text: string): Promise<string> => {
    await runGit(['fetch', '--quiet', 'origin'], person);
    await runGit(['checkout', '--quiet', '-B', branch, `origin/${branch}`], person);
    await writeFile(join(person, file), text);
    await runGit(['add', file], person);
    await runGit(['commit', '--quiet', '-m', `a person's change to ${file}`], person);
    await runGit(['push', '--quiet', 'origin', `${branch}:${branch}`], person);
    return (await runGit(['rev-parse', 'HEAD'], person)).trim();
  };
  const appYaml = (tag: string): string =>
    `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n  namespace: default\nspec:\n  template:\n    spec:\n      containers:\n        - name: app\n          image: ${registry.host}/app\n          tag: ${tag} # {"$imagepolicy": "flux-system:app:tag"}\n`;

  before(async () => {
    [gitea, registry] = await Promise.all([startGitea(), startRegistry({ auth: 'none' })]);
    base = await mkdtemp(join(tmpdir(), 'pawl-pr-'));
    configDir = join(base, 'config');
    stateDir = join(base, 'state');
    person = join(base, 'person');
    await mkdir(configDir);
    const url = await gitea.seed(REPO, person, { 'app.yaml': appYaml('1.0.0'), 'README.md': 'fleet\n' });
    await pushTags(registry.url, 'app', ['1.0.0', '1.1.0']);
    await writeFile(
      join(configDir, 'flux.yaml'),
      `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: { name: fleet, namespace: flux-system }
spec:
  interval: 1m
  url: ${url}
  ref: { branch: main }
  secretRef: { name: git }
---
${gitea.secrets()}---
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
---
apiVersion: image.pawl.dev/v1alpha1
kind: ImageUpdateAutomation
metadata: { name: fleet, namespace: flux-system }
spec:
  interval: 5m
  sourceRef: { kind: GitRepository, name: fleet }
  git:
    checkout: { ref: { branch: main } }
    commit:
      author: { name: pawl-bot, email: pawl@example.test }
    push:
      branch: 'pawl/{{ .AutomationObject.Name }}/{{ range .Changed.Changes }}{{ .Setter }}{{ end }}'
      pullRequest:
        provider: gitea
        secretRef: { name: gitea-token }
        title: 'Update app to {{ range .Changed.Changes }}{{ .NewValue }}{{ end }}'
        body: '{{ range .Changed.Changes }}- {{ .OldValue }} → {{ .NewValue }}{{ end }}'
        labels: [images, automated]
  update: { path: ./, strategy: Setters }
`,
    );
  });

  after(async () => {
    await Promise.all([gitea?.close(), registry?.stop()]);
    if (base) await rm(base, { recursive: true, force: true });
  });

  let first: number;

  test('a new tag: a branch named by the template and a pull request with the templated title, body and labels', async () => {
    const a = await pawlRun();
    assert.equal(a.error, null);
    assert.equal(a.result, 'pushed');
    assert.equal(a.branch, BRANCH);
    assert.match(await fileOn(BRANCH), /tag: 1\.1\.0 /);
    assert.match(await fileOn('main'), /tag: 1\.0\.0 /, 'the base is left as it was');
    const pulls = await openPulls();
    assert.equal(pulls.length, 1);
    const pr = pulls[0]!;
    assert.equal(pr.head.ref, BRANCH);
    assert.equal(pr.title, 'Update app to 1.1.0');
    assert.match(pr.body, /^- 1\.0\.0 → 1\.1\.0/);
    assert.deepEqual(pr.labels.map((l) => l.name).sort(), ['automated', 'images']);
    assert.equal(a.pullRequest?.number, pr.number);
    assert.equal(a.pullRequest?.action, 'opened');
    assert.match(a.pullRequest?.url ?? '', new RegExp(`/pulls/${pr.number}$`));
    first = pr.number;
  });

  test('a newer tag before merging: the same pull request, updated; one open pull request', async () => {
    await pushTags(registry.url, 'app', ['1.2.0']);
    const a = await pawlRun();
    assert.equal(a.error, null);
    assert.equal(a.pullRequest?.number, first);
    assert.equal(a.pullRequest?.action, 'updated');
    const pulls = await openPulls();
    assert.deepEqual(
      pulls.map((p) => [p.number, p.title]),
      [[first, 'Update app to 1.2.0']],
    );
    assert.match(pulls[0]!.body, /^- 1\.0\.0 → 1\.2\.0/);
    assert.match(await fileOn(BRANCH), /tag: 1\.2\.0 /);
  });

  test('a run with nothing new changes nothing on the forge', async () => {
    const a = await pawlRun();
    assert.equal(a.error, null);
    assert.equal(a.pullRequest?.action, 'unchanged');
    assert.equal((await openPulls()).length, 1);
  });

  test('merging the pull request: the next pass is up to date and opens nothing', async () => {
    await mergeWhenReady(gitea, first);
    assert.match(await fileOn('main'), /tag: 1\.2\.0 /);
    const a = await pawlRun();
    assert.equal(a.error, null);
    assert.equal(a.result, 'up-to-date');
    assert.equal(a.pullRequest, undefined);
    assert.deepEqual(await openPulls(), []);
  });

  test('a person sets a newer tag on the base: pawl’s open pull request proposing an older one is closed', async () => {
    await pushTags(registry.url, 'app', ['1.3.0']);
    const opened = await pawlRun();
    assert.equal(opened.pullRequest?.action, 'opened');
    const proposing = opened.pullRequest!.number;
    await personCommits('main', 'app.yaml', appYaml('1.5.0'));
    const a = await pawlRun();
    assert.equal(a.error, null);
    assert.equal(a.result, 'up-to-date');
    assert.deepEqual(await openPulls(), [], 'no pull request proposes 1.3.0 over 1.5.0');
    const closed = await gitea.api<GiteaPull>('GET', `/repos/${gitea.user}/${REPO}/pulls/${proposing}`);
    assert.equal(closed.state, 'closed');
    const comments = await gitea.api<{ body: string }[]>(
      'GET',
      `/repos/${gitea.user}/${REPO}/issues/${proposing}/comments`,
    );
    assert.ok(
      comments.some((c) => /already has the values/.test(c.body)),
      'closed with a comment saying why',
    );
  });

  test('a person’s commit on the pull request’s branch is never force-pushed: pawl uses another branch and says so', async () => {
    await pushTags(registry.url, 'app', ['1.6.0']);
    const opened = await pawlRun();
    assert.equal(opened.error, null);
    assert.equal(opened.branch, BRANCH);
    const theirs = opened.pullRequest!.number;
    const personal = await personCommits(BRANCH, 'NOTES.md', 'a person was here\n');
    await pushTags(registry.url, 'app', ['1.7.0']);
    const a = await pawlRun();
    assert.equal(a.error, null);
    assert.equal(a.branch, `${BRANCH}-2`);
    assert.match(a.pullRequest?.note ?? '', /has commits that pawl did not make/);
    await runGit(['fetch', '--quiet', 'origin'], person);
    assert.equal(
      (await runGit(['rev-parse', `origin/${BRANCH}`], person)).trim(),
      personal,
      'the person’s branch is as they left it',
    );
    assert.match(await fileOn(`${BRANCH}-2`), /tag: 1\.7\.0 /);
    const pulls = await openPulls();
    assert.deepEqual(
      pulls.map((p) => p.head.ref).sort(),
      [BRANCH, `${BRANCH}-2`],
      'the pull request holding the person’s commit is left open, not closed',
    );
    assert.ok(pulls.some((p) => p.number === theirs));
  });

  test('a token the forge refuses: the pass reports it with the automation’s name, and does not crash', async () => {
    const file = join(configDir, 'flux.yaml');
    const good = await readFile(file, 'utf8');
    const bad = 'f'.repeat(40);
    await writeFile(file, good.replace(`token: ${gitea.token}`, `token: ${bad}`));
    try {
      const r = await runCli(['run', '--json', '-c', configDir, '--state-dir', stateDir]);
      const a = (JSON.parse(r.stdout) as RunReport).automations[0]!;
      assert.equal(a.result, 'failed');
      assert.match(
        a.error ?? '',
        /^ImageUpdateAutomation flux-system\/fleet: the pull request could not be opened or updated: .*401.*pullRequest\.secretRef/,
      );
      assert.ok(!r.stdout.includes(bad) && !r.stderr.includes(bad), 'the refused token is not repeated');
    } finally {
      await writeFile(file, good);
    }
  });

  test('the token is nowhere in the state directory', async () => {
    const { execFile } = await import('node:child_process');
    const { promisify } = await import('node:util');
    const out = await promisify(execFile)('grep', ['-rlaF', gitea.token, stateDir]).catch(
      (err: { code?: number; stdout?: string }) => (err.code === 1 ? { stdout: '' } : Promise.reject(err)),
    );
    assert.equal(out.stdout, '', `files holding the token: ${out.stdout}`);
    const config = await readFile(join(configDir, 'flux.yaml'), 'utf8');
    assert.ok(config.includes(gitea.token), 'the check looks for the right string');
  });
});

/** Gitea checks mergeability in the background: wait for its verdict, then merge. */
async function mergeWhenReady(gitea: TestGitea, n: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    try {
      await gitea.api('POST', `/repos/${gitea.user}/${REPO}/pulls/${n}/merge`, { Do: 'merge' });
      return;
    } catch (err) {
      // 405 "try again later" while the check runs.
      if (!/: 405 /.test(String(err))) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`pull request ${n} never became mergeable`);
}
