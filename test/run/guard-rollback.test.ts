/**
 * Rolling back on purpose stays easy (SPEC §4 "Pins"): `pawl rollback` commits with trailers and
 * pins the lines; a new release or `pawl release` lifts the pin. A person's own backwards edit
 * pins the same way; a new line with an old tag is not a pin.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteStore } from '../../src/store/index.js';
import type { Explanation } from '../../src/run/explain.js';
import { pushTags } from '../helpers/push.js';
import { gitObjects, imageObjects, startWorld, type World } from '../helpers/world.js';
import type { RunReport } from '../../src/run/report.js';

const line = (tag: string, name = 'app') =>
  `        - name: ${name}\n          image: {{REGISTRY}}/org/app:${tag} # {"$imagepolicy": "flux-system:app"}\n`;
const deploy = (...lines: string[]) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    spec:
      containers:
${lines.join('')}`;

async function world(): Promise<World> {
  const w = await startWorld({
    files: { 'deploy.yaml': deploy(line('1.0.0')) },
    config: {
      'git.yaml': gitObjects(),
      'app.yaml': imageObjects('app', '{{REGISTRY}}/org/app', 'semver:\n  range: ">=1.0.0"'),
    },
  });
  await pushTags(w.registry.url, 'org/app', ['1.0.0', '1.1.0', '1.2.0']);
  const r = await w.pawlJson<RunReport>(['run']);
  assert.equal(r.json.automations[0]!.result, 'pushed', r.stderr);
  return w;
}

const fileAt = async (w: World) => w.git.show(w.repoName, 'main', 'deploy.yaml');
const run = async (w: World) => {
  const r = await w.pawlJson<RunReport>(['run', '--refresh']);
  assert.equal(r.code, 0, r.stderr);
  return r.json.automations[0]!;
};

describe('pawl rollback', () => {
  let w: World;
  before(async () => (w = await world()));
  after(() => w?.close());

  test('commits the older tag with trailers; the next runs keep it (pinned); a new release upgrades', async () => {
    const rb = await w.pawl([
      'rollback',
      'flux-system/app',
      '--to',
      '1.1.0',
      '--reason',
      'memory leak in 1.2.0',
    ]);
    assert.equal(rb.code, 0, rb.stderr);
    const [head] = await w.git.log(w.repoName, 'main');
    assert.match(head!.subject, /Roll back flux-system\/app to 1\.1\.0/);
    assert.match(head!.body, /^Pawl-Policy: flux-system\/app$/m);
    assert.match(head!.body, /^Pawl-Old: .*org\/app:1\.2\.0$/m);
    assert.match(head!.body, /^Pawl-New: 1\.1\.0$/m);
    assert.match(head!.body, /^Pawl-Reason: memory leak in 1\.2\.0$/m);
    assert.match(await fileAt(w), /org\/app:1\.1\.0 /);

    for (let i = 0; i < 2; i++) {
      const a = await run(w);
      assert.equal(a.result, 'up-to-date');
      assert.equal(a.kept[0]!.reason, 'pinned');
      assert.match(a.kept[0]!.detail, /pinned/);
    }
    const explain = await w.pawl(['explain', 'app']);
    assert.match(explain.stdout, /pawl release flux-system\/app/);

    await pushTags(w.registry.url, 'org/app', ['1.3.0']);
    const a = await run(w);
    assert.equal(a.result, 'pushed');
    assert.equal(a.changes[0]!.new.endsWith(':1.3.0'), true);
  });

  test('pawl release upgrades at once', async () => {
    assert.equal((await w.pawl(['rollback', 'app', '--to', '1.0.0'])).code, 0);
    assert.equal((await run(w)).kept[0]!.reason, 'pinned');
    const rel = await w.pawl(['release', 'app']);
    assert.equal(rel.code, 0, rel.stderr);
    const [head] = await w.git.log(w.repoName, 'main');
    assert.match(head!.body, /^Pawl-Release: flux-system\/app$/m);
    const store = openSqliteStore(w.stateDir);
    try {
      const [d] = (await store.decisions({ policy: 'flux-system/app' })).filter(
        (x) => x.runKind === 'release',
      );
      assert.equal(d?.action, 'write');
      const recorded = (await store.getRun(d!.runId))?.result as { automations: { commit: string }[] };
      assert.equal(recorded.automations[0]?.commit, head!.sha, 'the release run names its commit');
    } finally {
      await store.close();
    }
    assert.match(await fileAt(w), /org\/app:1\.3\.0 /);
    assert.equal((await run(w)).result, 'up-to-date');
  });

  test('rollback to a tag that does not exist is refused and writes nothing', async () => {
    const before = (await w.git.log(w.repoName, 'main')).length;
    const r = await w.pawl(['rollback', 'app', '--to', '0.0.9']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /0\.0\.9 does not exist/);
    assert.equal((await w.git.log(w.repoName, 'main')).length, before);
  });

  test('--to that is not a tag is bad usage (exit 2, with the rule), even where the registry would find it', async () => {
    const before = (await w.git.log(w.repoName, 'main')).length;
    for (const bad of ['../manifests/1.0.0', '1.0.0 ', 'a b', '-1.0.0', 'x'.repeat(129)]) {
      const r = await w.pawl(['rollback', 'app', '--to', bad]);
      assert.equal(r.code, 2, `${bad}: ${r.stderr}`);
      assert.match(r.stderr, /is not a tag; a tag is 1 to 128 characters/);
    }
    assert.equal((await w.git.log(w.repoName, 'main')).length, before);
    assert.doesNotMatch(await fileAt(w), /manifests/);
  });
});

describe('who rolled back and why', () => {
  let w: World;
  // No git identity of the machine running the tests may leak into what is recorded.
  let home: string;
  before(async () => {
    w = await world();
    home = await mkdtemp(join(tmpdir(), 'pawl-home-'));
  });
  after(async () => {
    await w?.close();
    if (home) await rm(home, { recursive: true, force: true });
  });
  const isolated = (extra: Record<string, string> = {}) => ({
    env: { HOME: home, GIT_CONFIG_GLOBAL: join(home, '.gitconfig'), GIT_CONFIG_NOSYSTEM: '1', ...extra },
  });

  test('the person is the commit’s author, the automation its committer; explain, the JSON and the store show who and why', async () => {
    const rb = await w.pawl(
      [
        'rollback',
        'app',
        '--to',
        '1.1.0',
        '--reason',
        'memory leak in 1.2.0',
        '--author',
        'Dana Dev <dana@example.com>',
      ],
      isolated(),
    );
    assert.equal(rb.code, 0, rb.stderr);
    assert.match(
      rb.stdout,
      /by Dana Dev <dana@example\.com> \(from --author\), because: memory leak in 1\.2\.0/,
    );
    const [head] = await w.git.log(w.repoName, 'main');
    assert.deepEqual(
      [head!.authorName, head!.authorEmail, head!.committerName, head!.committerEmail],
      ['Dana Dev', 'dana@example.com', 'pawl-bot', 'pawl@example.com'],
    );
    assert.match(head!.body, /^Pawl-Reason: memory leak in 1\.2\.0$/m);

    // The next run keeps the line, and its sentence says who and why.
    const kept = (await run(w)).kept[0]!;
    assert.equal(kept.reason, 'pinned');
    assert.match(kept.detail, /pawl rollback by Dana Dev .*because: memory leak in 1\.2\.0/);

    const text = await w.pawl(['explain', 'app']);
    assert.match(text.stdout, /^ {2}rolled back by: Dana Dev <dana@example\.com>$/m);
    assert.match(text.stdout, /^ {2}reason: memory leak in 1\.2\.0$/m);
    const json = await w.pawlJson<Explanation>(['explain', 'app']);
    const pin = json.json.markers[0]!.pin!;
    assert.deepEqual(
      [pin.state, pin.kind, pin.author, pin.reason],
      ['pinned', 'rollback', 'Dana Dev <dana@example.com>', 'memory leak in 1.2.0'],
    );

    const store = openSqliteStore(w.stateDir);
    try {
      const [event] = await store.events({ kind: 'rollback', policy: 'flux-system/app' });
      assert.equal(event?.detail.requestedBy, 'Dana Dev <dana@example.com>');
      assert.equal(event?.detail.reason, 'memory leak in 1.2.0');
      assert.deepEqual(event?.detail.commits, [{ automation: 'flux-system/fleet', commit: head!.sha }]);
      const [d] = (await store.decisions({ policy: 'flux-system/app' })).filter(
        (x) => x.runKind === 'rollback',
      );
      assert.equal(d?.action, 'write');
      assert.match(d!.detail, /by Dana Dev <dana@example\.com>: memory leak in 1\.2\.0/);
      const runRecord = await store.getRun(d!.runId);
      assert.equal(runRecord?.kind, 'rollback');
      assert.deepEqual(runRecord?.result, {
        policy: 'flux-system/app',
        to: '1.1.0',
        reason: 'memory leak in 1.2.0',
        requestedBy: 'Dana Dev <dana@example.com>',
        automations: [{ name: 'flux-system/fleet', result: 'pushed', commit: head!.sha }],
      });
    } finally {
      await store.close();
    }
  });

  test('without --author the person comes from git’s own settings, as `git commit` finds them', async () => {
    await writeFile(
      join(home, '.gitconfig'),
      '[user]\n\tname = Config Person\n\temail = config@example.com\n',
    );
    const fromConfig = await w.pawl(['rollback', 'app', '--to', '1.0.0'], isolated());
    assert.equal(fromConfig.code, 0, fromConfig.stderr);
    assert.match(fromConfig.stdout, /by Config Person <config@example\.com> \(from git config\)/);
    assert.equal((await w.git.log(w.repoName, 'main'))[0]!.authorName, 'Config Person');

    const fromEnv = await w.pawl(
      ['rollback', 'app', '--to', '1.1.0'],
      isolated({ GIT_AUTHOR_NAME: 'Env Person', GIT_AUTHOR_EMAIL: 'env@example.com' }),
    );
    assert.equal(fromEnv.code, 0, fromEnv.stderr);
    assert.equal((await w.git.log(w.repoName, 'main'))[0]!.authorEmail, 'env@example.com');
  });

  test('nobody known: the rollback goes ahead as the automation’s, and says how to record the person', async () => {
    await rm(join(home, '.gitconfig'), { force: true });
    const r = await w.pawl(['rollback', 'app', '--to', '1.0.0'], isolated());
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /not recorded .*--author "Name <email>"/);
    assert.equal((await w.git.log(w.repoName, 'main'))[0]!.authorName, 'pawl-bot');
    const bad = await w.pawl(['rollback', 'app', '--to', '1.1.0', '--author', 'just a name'], isolated());
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /--author "just a name" is not "Name <email>"/);
  });
});

describe('a person edits by hand', () => {
  let w: World;
  before(async () => (w = await world()));
  after(() => w?.close());

  test('committing an older tag pins the line like a rollback', async () => {
    await w.git.commitFiles(
      w.repoName,
      'main',
      { 'deploy.yaml': deploy(line('1.1.0')).replaceAll('{{REGISTRY}}', w.registryHost) },
      {
        message: 'Go back to 1.1.0, 1.2.0 is broken',
        author: { name: 'Ops Person', email: 'ops@example.com' },
      },
    );
    const a = await run(w);
    assert.equal(a.result, 'up-to-date');
    assert.equal(a.kept[0]!.reason, 'pinned');
    assert.match(a.kept[0]!.detail, /Ops Person/);
    await pushTags(w.registry.url, 'org/app', ['1.2.1']);
    const b = await run(w);
    assert.equal(b.result, 'pushed');
    assert.match(await fileAt(w), /org\/app:1\.2\.1 /);
  });

  test('a new marked line with an old tag is upgraded normally', async () => {
    const text = deploy(line('1.2.1'), line('1.0.0', 'canary')).replaceAll('{{REGISTRY}}', w.registryHost);
    await w.git.commitFiles(
      w.repoName,
      'main',
      { 'deploy.yaml': text },
      { message: 'Add a canary container', author: { name: 'Ops Person', email: 'ops@example.com' } },
    );
    const a = await run(w);
    assert.equal(a.result, 'pushed');
    assert.deepEqual(
      a.changes.map((c) => [c.line, c.new.split(':').pop()]),
      [[12, '1.2.1']],
    );
  });
});
