/**
 * Grouping and the batching window against a real Gitea, a real registry and real Git (issue
 * 25): five policies updated within one `spec.git.commit.batch` window → one commit and one pull
 * request naming all five; and `group: policy` → a commit per changed policy on the pull
 * request's branch. The passes run in this process on the injected clock (test/helpers/clock.ts),
 * so the window passes without waiting; the store is closed and opened again between passes, as
 * `pawl run` from cron or a restarted daemon would.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/index.js';
import { directScans, explain, runPass, type Explanation } from '../../src/run/index.js';
import type { AutomationReport } from '../../src/records/index.js';
import { createScanClients } from '../../src/scan/index.js';
import { openSqliteStore } from '../../src/store/index.js';
import { silentLogger } from '../../src/util/index.js';
import { FakeClock } from '../helpers/clock.js';
import { startGitea, type TestGitea } from '../helpers/gitea.js';
import { startRegistry, type TestRegistry } from '../helpers/registry.js';
import { pushTags } from '../helpers/push.js';
import { runGit } from '../helpers/git-server.js';

interface GiteaPull {
  number: number;
  title: string;
  body: string;
  head: { ref: string };
}

const APPS = ['a', 'b', 'c', 'd', 'e'];
const MINUTE = 60_000;

describe('commit grouping and batching on a real Gitea', () => {
  let gitea: TestGitea;
  let registry: TestRegistry;
  let base: string;
  const clock = new FakeClock();

  /** A repository on Gitea with one marked file per app at 1.0.0, and its pawl configuration. */
  const fleet = async (
    repo: string,
    apps: string[],
    commit: string,
    oneFile = false,
  ): Promise<{ configDir: string; stateDir: string; person: string }> => {
    const dir = join(base, repo);
    const [configDir, stateDir, person] = ['config', 'state', 'person'].map((d) => join(dir, d)) as [
      string,
      string,
      string,
    ];
    for (const d of [configDir, stateDir]) await mkdir(d, { recursive: true });
    const deployment = (app: string): string =>
      `apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: ${app}, namespace: default }\nspec:\n  template:\n    spec:\n      containers:\n        - name: ${app}\n          image: ${registry.host}/${app}:1.0.0 # {"$imagepolicy": "flux-system:${app}"}\n`;
    const url = await gitea.seed(
      repo,
      person,
      oneFile
        ? { 'apps/all.yaml': apps.map(deployment).join('---\n') }
        : Object.fromEntries(apps.map((app) => [`apps/${app}.yaml`, deployment(app)])),
    );
    const images = apps.map(
      (app) => `---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: { name: ${app}, namespace: flux-system }
spec: { image: ${registry.host}/${app}, interval: 1m }
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: { name: ${app}, namespace: flux-system }
spec:
  imageRepositoryRef: { name: ${app} }
  policy: { semver: { range: ">=1.0.0" } }
`,
    );
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
${gitea.secrets()}${images.join('')}---
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
${commit}
    push:
      branch: pawl/fleet
      pullRequest:
        provider: gitea
        secretRef: { name: gitea-token }
        title: 'Update images'
        body: '{{ range .Changed.Changes }}- {{ .OldValue }} → {{ .NewValue }}{{ "\\n" }}{{ end }}'
  update: { path: ./, strategy: Setters }
`,
    );
    return { configDir, stateDir, person };
  };

  /** One `pawl run --refresh` in this process at the clock's time, on a store opened for it alone. */
  const pass = async (configDir: string, stateDir: string): Promise<AutomationReport> => {
    const { config, problems } = await loadConfig([configDir]);
    assert.deepEqual(
      problems.filter((p) => p.severity === 'error'),
      [],
    );
    const store = openSqliteStore(stateDir, {});
    try {
      const now = (): Date => new Date(clock.now());
      const clients = createScanClients(config, { log: silentLogger });
      const report = await runPass(
        {
          config,
          store,
          stateDir,
          clients,
          log: silentLogger,
          now,
          scans: directScans({ clients, store, log: silentLogger, now }),
        },
        { refresh: true },
      );
      const a = report.automations[0]!;
      assert.equal(a.error, null);
      return a;
    } finally {
      await store.close();
    }
  };
  /** `pawl explain POLICY --json`, in this process at the clock's time. */
  const explainPolicy = async (configDir: string, stateDir: string, policy: string): Promise<Explanation> => {
    const { config } = await loadConfig([configDir]);
    const store = openSqliteStore(stateDir, {});
    try {
      const clients = createScanClients(config, { log: silentLogger });
      const now = (): Date => new Date(clock.now());
      return await explain(
        { config, store, stateDir, clients, log: silentLogger, now },
        config.imagePolicies.get(policy)!,
      );
    } finally {
      await store.close();
    }
  };
  const openPulls = (repo: string): Promise<GiteaPull[]> =>
    gitea.api<GiteaPull[]>('GET', `/repos/${gitea.user}/${repo}/pulls?state=open`);
  const remoteBranches = async (person: string): Promise<string> => {
    await runGit(['fetch', '--quiet', '--prune', 'origin'], person);
    return runGit(['branch', '-r'], person);
  };

  before(async () => {
    [gitea, registry] = await Promise.all([startGitea(), startRegistry({ auth: 'none' })]);
    base = await mkdtemp(join(tmpdir(), 'pawl-pr-batch-'));
    await clock.advance(Date.parse('2026-12-02T04:00:00Z'));
    for (const app of APPS) await pushTags(registry.url, app, ['1.0.0']);
  });

  after(async () => {
    await Promise.all([gitea?.close(), registry?.stop()]);
    if (base) await rm(base, { recursive: true, force: true });
  });

  test('five policies updated within one batching window: held, then one commit and one pull request naming all five', async () => {
    const { configDir, stateDir, person } = await fleet('batched', APPS, '      batch: 10m');
    const first = await pass(configDir, stateDir);
    assert.equal(first.result, 'up-to-date', 'nothing new yet: no batch opens');
    assert.equal(first.batch, undefined);

    await clock.advance(MINUTE); // 04:01: the first update opens the window
    await pushTags(registry.url, 'a', ['1.1.0']);
    const opened = await pass(configDir, stateDir);
    assert.equal(opened.result, 'up-to-date');
    assert.deepEqual(opened.changes, []);
    assert.deepEqual(opened.batch, {
      openedAt: '2026-12-02T04:01:00.000Z',
      writesAt: '2026-12-02T04:11:00.000Z',
    });
    const held = opened.kept.find((k) => k.policy === 'flux-system/a')!;
    assert.equal(held.reason, 'batched');
    assert.equal(held.candidate, `${registry.host}/a:1.1.0`);
    assert.match(held.detail, /writes at 2026-12-02T04:11:00\.000Z/);
    assert.doesNotMatch(await remoteBranches(person), /pawl\/fleet/, 'nothing pushed while held');
    assert.deepEqual(await openPulls('batched'), [], 'no pull request while held');
    const whileHeld = await explainPolicy(configDir, stateDir, 'flux-system/a');
    assert.deepEqual(whileHeld.proposals, [
      {
        automation: 'flux-system/fleet',
        pullRequest: null,
        batch: { openedAt: '2026-12-02T04:01:00.000Z', writesAt: '2026-12-02T04:11:00.000Z' },
      },
    ]);

    await clock.advance(3 * MINUTE); // 04:04
    await pushTags(registry.url, 'b', ['1.1.0']);
    await pushTags(registry.url, 'c', ['1.1.0']);
    const more = await pass(configDir, stateDir);
    assert.deepEqual(
      more.batch?.writesAt,
      '2026-12-02T04:11:00.000Z',
      'the same window: its start was stored',
    );
    assert.deepEqual(
      more.kept
        .filter((k) => k.reason === 'batched')
        .map((k) => k.policy)
        .sort(),
      ['flux-system/a', 'flux-system/b', 'flux-system/c'],
    );

    await clock.advance(6 * MINUTE + 59_999); // 04:10:59.999, a millisecond before the end
    await pushTags(registry.url, 'd', ['1.1.0']);
    await pushTags(registry.url, 'e', ['1.1.0']);
    await pushTags(registry.url, 'a', ['1.2.0']);
    const last = await pass(configDir, stateDir);
    assert.equal(last.result, 'up-to-date', 'still held');
    assert.equal(last.kept.filter((k) => k.reason === 'batched').length, 5);
    assert.doesNotMatch(await remoteBranches(person), /pawl\/fleet/);

    await clock.advance(1); // 04:11: the window's end
    const written = await pass(configDir, stateDir);
    assert.equal(written.result, 'pushed');
    assert.equal(written.batch, undefined);
    assert.deepEqual(
      written.changes.map((c) => [c.policy, c.new]),
      APPS.map((app) => [`flux-system/${app}`, `${registry.host}/${app}:${app === 'a' ? '1.2.0' : '1.1.0'}`]),
      'all five, each at its newest candidate at write time',
    );
    await remoteBranches(person);
    assert.equal(
      (await runGit(['rev-list', '--count', 'origin/main..origin/pawl/fleet'], person)).trim(),
      '1',
      'exactly one commit',
    );
    const message = await runGit(['log', '-1', '--format=%B', 'origin/pawl/fleet'], person);
    for (const app of APPS) assert.match(message, new RegExp(`Pawl-Updated: .*flux-system/${app}`));
    const pulls = await openPulls('batched');
    assert.equal(pulls.length, 1, 'exactly one pull request');
    assert.equal(pulls[0]!.head.ref, 'pawl/fleet');
    for (const app of APPS)
      assert.match(
        pulls[0]!.body,
        new RegExp(`- \\S+/${app}:1\\.0\\.0 → \\S+/${app}:${app === 'a' ? '1\\.2\\.0' : '1\\.1\\.0'}`),
        `the body names ${app}`,
      );
    assert.equal(written.pullRequest?.number, pulls[0]!.number);
    assert.equal(written.pullRequest?.action, 'opened');

    const explained = await explainPolicy(configDir, stateDir, 'flux-system/c');
    assert.deepEqual(explained.proposals, [
      {
        automation: 'flux-system/fleet',
        pullRequest: {
          number: pulls[0]!.number,
          url: written.pullRequest!.url,
          state: 'open',
          action: 'opened',
          at: '2026-12-02T04:11:00.000Z',
        },
        batch: null,
      },
    ]);
    assert.match(explained.proposals[0]!.pullRequest!.url, new RegExp(`/pulls/${pulls[0]!.number}$`));

    const after = await pass(configDir, stateDir);
    assert.equal(after.batch, undefined, 'the batch closed with its write: the next pass holds nothing');
    assert.equal(after.pullRequest?.action, 'unchanged');
  });

  test('group: policy: two changed policies in one file, two commits on the pull request branch, each its own message', async () => {
    const { configDir, stateDir, person } = await fleet(
      'grouped',
      ['a', 'b'],
      `      group: policy
      messageTemplate: 'Update {{ range .Changed.Changes }}{{ .NewValue }}{{ end }}'`,
      true,
    );
    const a = await pass(configDir, stateDir);
    assert.equal(a.result, 'pushed');
    assert.equal(a.changes.length, 2);
    await remoteBranches(person);
    const range = 'origin/main..origin/pawl/fleet';
    assert.equal(
      (await runGit(['rev-list', '--count', range], person)).trim(),
      '2',
      'a commit per changed policy',
    );
    const log = await runGit(
      ['log', '--reverse', '--format=%s|%(trailers:key=Pawl-Updated,valueonly,separator=%x2C)', range],
      person,
    );
    assert.deepEqual(log.trim().split('\n'), [
      `Update ${registry.host}/a:1.2.0|flux-system/a`,
      `Update ${registry.host}/b:1.1.0|flux-system/b`,
    ]);
    // Byte for byte: the first commit moved only a's line, the second only b's, in one file.
    const initial = await runGit(['show', 'origin/main:apps/all.yaml'], person);
    const firstCommit = await runGit(['show', 'origin/pawl/fleet~1:apps/all.yaml'], person);
    const second = await runGit(['show', 'origin/pawl/fleet:apps/all.yaml'], person);
    assert.equal(firstCommit, initial.replace(`/a:1.0.0 `, `/a:1.2.0 `));
    assert.equal(second, firstCommit.replace(`/b:1.0.0 `, `/b:1.1.0 `));
    const pulls = await openPulls('grouped');
    assert.equal(pulls.length, 1, 'one pull request carries every commit of the pass');
    assert.match(pulls[0]!.body, /a:1\.2\.0[\s\S]*b:1\.1\.0/);
  });
});
