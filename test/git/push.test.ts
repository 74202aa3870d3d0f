import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runGit, startGitServer, type GitServer } from '../helpers/git-server.js';
import { openWorkspace, type Workspace } from '../../src/git/workspace.js';
import { commit } from '../../src/git/commit.js';
import { push, pushWithRetry } from '../../src/git/push.js';
import { GitError } from '../../src/git/exec.js';
import type { GitRef } from '../../src/config/types.js';
import { silentLogger } from '../../src/util/log.js';
import { gitRepository, secret, tempDir } from './fixtures.js';

const PASSWORD = 'push-secret-pw';
const author = { name: 'Flux Bot', email: 'fluxbot@example.com' };
const creds = secret('creds', { username: 'bot', password: PASSWORD });

/** The lead's attempt, in miniature: recompute from the files, bump one marked value. */
function bumpTo(tag: string, automation = 'flux-system/auto', date?: Date) {
  return async (ws: Workspace): Promise<string | null> => {
    const file = join(ws.dir, 'deploy.yaml');
    const text = await readFile(file, 'utf8');
    const next = text.replace(/image: app:[^\s]+/, `image: app:${tag}`);
    if (next === text) return null;
    await writeFile(file, next);
    return commit(ws, {
      message: `Update app to ${tag}`,
      author,
      automation,
      files: ['deploy.yaml'],
      ...(date ? { date } : {}),
    });
  };
}

describe('push', () => {
  let server: GitServer;
  let state: { dir: string; cleanup: () => Promise<void> };
  let n = 0;

  async function setup(ref?: GitRef): Promise<{ name: string; ws: Workspace }> {
    n++;
    const name = `p${n}`;
    await server.createBareRepo(name, { 'deploy.yaml': 'image: app:1.0.0\n', 'notes.txt': 'notes\n' });
    const ws = await openWorkspace({
      stateDir: state.dir,
      repo: gitRepository(server.cloneUrl(name), { name }),
      secret: creds,
      ...(ref ? { ref } : {}),
      log: silentLogger,
    });
    return { name, ws };
  }

  before(async () => {
    server = await startGitServer({ users: { bot: PASSWORD } });
    state = await tempDir();
  });
  after(async () => {
    await server.close();
    await state.cleanup();
  });

  test('to the checkout branch', async () => {
    const { name, ws } = await setup();
    const sha = await bumpTo('1.1.0')(ws);
    const r = await push(ws);
    assert.deepEqual(
      { pushed: r.pushed, rejected: r.rejected, branch: r.branch, forced: r.forced },
      { pushed: true, rejected: null, branch: 'main', forced: false },
    );
    assert.equal(await server.revParse(name, 'refs/heads/main'), sha);
    assert.equal(await server.show(name, 'main', 'deploy.yaml'), 'image: app:1.1.0\n');
  });

  test('to a new push branch, created from the checkout branch; main untouched', async () => {
    const { name, ws } = await setup();
    const mainBefore = await server.revParse(name, 'refs/heads/main');
    const sha = await bumpTo('1.2.0')(ws);
    const r = await push(ws, { branch: 'image-updates' });
    assert.equal(r.pushed, true);
    assert.equal(r.branch, 'image-updates');
    assert.equal(await server.revParse(name, 'refs/heads/image-updates'), sha);
    assert.equal(await server.revParse(name, 'refs/heads/main'), mainBefore);
    const log = await server.log(name, 'image-updates');
    assert.equal(log[1]!.sha, mainBefore, 'branched from main');
  });

  test("pawl's own push branch is replaced (with a lease); someone else's is never forced", async () => {
    const { name, ws } = await setup();
    await bumpTo('1.3.0')(ws);
    assert.equal((await push(ws, { branch: 'auto' })).pushed, true);

    // main moves on; the next run recomputes from main and replaces pawl's earlier branch.
    const mainNow = await server.commitFiles(
      name,
      'main',
      { 'notes.txt': 'more notes\n' },
      { message: 'unrelated' },
    );
    await ws.refresh();
    const sha = await bumpTo('1.4.0')(ws);
    const r = await push(ws, { branch: 'auto' });
    assert.equal(r.pushed, true);
    assert.equal(r.forced, true);
    const log = await server.log(name, 'auto');
    assert.equal(log[0]!.sha, sha);
    assert.equal(log[1]!.sha, mainNow);

    // Same content again: nothing to push, no churn.
    await ws.refresh();
    // Another commit (a later date) with the same content.
    assert.ok(await bumpTo('1.4.0', 'flux-system/auto', new Date('2030-01-01T00:00:00Z'))(ws));
    const same = await push(ws, { branch: 'auto' });
    assert.deepEqual([same.pushed, same.rejected], [false, null]);
    assert.match(same.message, /already has these changes/);
    assert.equal(await server.revParse(name, 'refs/heads/auto'), sha);

    // A person adds a commit to the push branch: pawl refuses to overwrite it.
    const human = await server.commitFiles(
      name,
      'auto',
      { 'notes.txt': 'review fix\n' },
      { message: 'fix by a person' },
    );
    await server.commitFiles(name, 'main', { 'notes.txt': 'main moved again\n' }, { message: 'main again' });
    await ws.refresh();
    await bumpTo('1.5.0')(ws);
    const refused = await push(ws, { branch: 'auto' });
    assert.equal(refused.pushed, false);
    assert.equal(refused.rejected, 'not-owned');
    assert.match(refused.message, /did not make/);
    assert.equal(await server.revParse(name, 'refs/heads/auto'), human);
  });

  test('race: another writer pushes between fetch and push; pushWithRetry lands and keeps their commit', async () => {
    const { name, ws } = await setup();
    let theirs = '';
    server.beforePush(name, async ({ count }) => {
      if (count === 1)
        theirs = await server.commitFiles(
          name,
          'main',
          { 'notes.txt': 'edited by a person\n' },
          { message: 'person edits notes' },
        );
    });
    const attempts: number[] = [];
    const result = await pushWithRetry(
      ws,
      async (w, k) => {
        attempts.push(k);
        return bumpTo('2.0.0')(w);
      },
      { maxAttempts: 3 },
    );
    server.beforePush(name, null);
    assert.equal(result.pushed, true);
    assert.equal(result.attempts, 2);
    assert.deepEqual(attempts, [1, 2]);
    const log = await server.log(name, 'main');
    assert.equal(log[0]!.sha, result.commit);
    assert.equal(log[1]!.sha, theirs, "the other writer's commit is kept, directly below pawl's");
    assert.equal(await server.show(name, 'main', 'notes.txt'), 'edited by a person\n');
    assert.equal(await server.show(name, 'main', 'deploy.yaml'), 'image: app:2.0.0\n');
  });

  test('race at the last moment (the server cannot lock the ref): also retried and landed', async () => {
    const { name, ws } = await setup();
    let theirs = '';
    server.beforePush(
      name,
      async ({ count }) => {
        if (count === 1)
          theirs = await server.commitFiles(
            name,
            'main',
            { 'notes.txt': 'late writer\n' },
            { message: 'late writer' },
          );
      },
      { stage: 'receive' },
    );
    const result = await pushWithRetry(ws, bumpTo('2.5.0'));
    server.beforePush(name, null);
    assert.equal(result.pushed, true);
    assert.equal(result.attempts, 2);
    const log = await server.log(name, 'main');
    assert.deepEqual([log[0]!.sha, log[1]!.sha], [result.commit, theirs]);
  });

  test('race where the other writer made the same change: nothing left to commit', async () => {
    const { name, ws } = await setup();
    server.beforePush(name, async ({ count }) => {
      if (count === 1)
        await server.commitFiles(
          name,
          'main',
          { 'deploy.yaml': 'image: app:3.0.0\n' },
          { message: 'person bumps' },
        );
    });
    const result = await pushWithRetry(ws, bumpTo('3.0.0'));
    server.beforePush(name, null);
    assert.equal(result.pushed, false);
    assert.equal(result.rejected, null);
    assert.equal(result.commit, null);
    assert.equal(result.attempts, 2);
  });

  test('two writers of the same change from the same fetch (two replicas): one commit lands, the other finds it done', async (t) => {
    const { name, ws } = await setup();
    const otherState = await tempDir();
    t.after(() => otherState.cleanup());
    const other = await openWorkspace({
      stateDir: otherState.dir,
      repo: gitRepository(server.cloneUrl(name), { name }),
      secret: creds,
      log: silentLogger,
    });
    assert.equal(other.base, ws.base, 'both fetched the same head');
    const first = await pushWithRetry(
      other,
      bumpTo('3.5.0', 'flux-system/auto', new Date(1_000_000_000_000)),
    );
    assert.equal(first.pushed, true);
    // The second push is not a fast-forward of what it fetched: refused, refreshed, nothing left to do.
    const second = await pushWithRetry(ws, bumpTo('3.5.0', 'flux-system/auto', new Date(1_000_000_100_000)));
    assert.deepEqual(
      [second.pushed, second.rejected, second.commit, second.attempts],
      [false, null, null, 2],
    );
    const log = await server.log(name, 'main');
    assert.equal(log.filter((c) => c.subject === 'Update app to 3.5.0').length, 1, 'one commit, not two');
    assert.equal(log[0]!.sha, first.commit);
  });

  test('a person rewinds the branch between fetch and push: the push is refused (compare-and-swap on the fetched head), the retry builds on what they left', async () => {
    n++;
    const name = `p${n}`;
    await server.createBareRepo(name, { 'deploy.yaml': 'image: app:1.0.0\n', 'notes.txt': 'notes\n' });
    const first = (await server.revParse(name, 'refs/heads/main'))!;
    await server.commitFiles(name, 'main', { 'notes.txt': 'a mistake\n' }, { message: 'a mistake' });
    const ws = await openWorkspace({
      stateDir: state.dir,
      repo: gitRepository(server.cloneUrl(name), { name }),
      secret: creds,
      log: silentLogger,
    });
    const mistake = ws.base;
    // After pawl fetched: the person takes their commit back (git push --force to its parent).
    await runGit(['update-ref', 'refs/heads/main', first, mistake], server.repoPath(name));
    await bumpTo('3.7.0')(ws);
    const once = await push(ws);
    // The commit would have been a fast-forward of the rewound branch; only the lease refuses it.
    assert.equal(once.pushed, false);
    assert.equal(once.rejected, 'non-fast-forward');
    assert.equal(await server.revParse(name, 'refs/heads/main'), first);

    // What pushWithRetry does after a refusal: fetch again and redo the change on what is there.
    await ws.refresh();
    const retried = await pushWithRetry(ws, bumpTo('3.7.0'));
    assert.equal(retried.pushed, true);
    const log = await server.log(name, 'main');
    assert.equal(log[0]!.sha, retried.commit);
    assert.equal(log[1]!.sha, first, 'the new commit sits on the rewound branch');
    assert.ok(!log.some((c) => c.sha === mistake), 'the commit the person removed stays removed');
    assert.equal(await server.show(name, 'main', 'notes.txt'), 'notes\n');
  });

  test('a signal aborted before the push (a replica that lost its lease): nothing is pushed', async () => {
    const { name, ws } = await setup();
    const before = await server.revParse(name, 'refs/heads/main');
    const controller = new AbortController();
    const attempt = async (w: Workspace) => {
      const sha = await bumpTo('3.6.0')(w);
      controller.abort(new Error('lost the lease'));
      return sha;
    };
    await assert.rejects(pushWithRetry(ws, attempt, { signal: controller.signal }), /lost the lease/);
    assert.equal(await server.revParse(name, 'refs/heads/main'), before);
  });

  test('a branch that keeps moving: gives up after maxAttempts with non-fast-forward', async () => {
    const { name, ws } = await setup();
    server.beforePush(name, async ({ count }) => {
      await server.commitFiles(
        name,
        'main',
        { 'notes.txt': `writer ${count}\n` },
        { message: `writer ${count}` },
      );
    });
    const result = await pushWithRetry(ws, bumpTo('4.0.0'), { maxAttempts: 2 });
    server.beforePush(name, null);
    assert.equal(result.pushed, false);
    assert.equal(result.rejected, 'non-fast-forward');
    assert.equal(result.attempts, 2);
    assert.match(result.message, /gave up after 2 attempts/);
  });

  test('protected branch: rejected for good, no retry loop', async () => {
    const { name, ws } = await setup();
    await server.protectBranch(name, 'main');
    const before = await server.revParse(name, 'refs/heads/main');
    let calls = 0;
    const result = await pushWithRetry(ws, async (w) => {
      calls++;
      return bumpTo('5.0.0')(w);
    });
    assert.equal(result.pushed, false);
    assert.equal(result.rejected, 'protected');
    assert.equal(result.attempts, 1);
    assert.equal(calls, 1);
    assert.match(result.message, /pre-receive hook declined/);
    assert.match(result.message, /Protected branch/);
    assert.equal(await server.revParse(name, 'refs/heads/main'), before);
    // The workspace is usable by the next run.
    const again = await openWorkspace({
      stateDir: state.dir,
      repo: ws.repo,
      secret: creds,
      log: silentLogger,
    });
    assert.equal(again.head, before);
    assert.deepEqual(await again.status(), []);
  });

  test('refspec and push options are sent', async () => {
    const { name, ws } = await setup();
    const hook = join(server.repoPath(name), 'hooks', 'post-receive');
    await writeFile(
      hook,
      '#!/bin/sh\ni=0\nwhile [ "$i" -lt "${GIT_PUSH_OPTION_COUNT:-0}" ]; do eval "echo \\$GIT_PUSH_OPTION_$i"; i=$((i+1)); done > "$GIT_DIR/push-options"\n',
      { mode: 0o755 },
    );
    const sha = await bumpTo('6.0.0')(ws);
    const r = await push(ws, {
      branch: 'auto',
      refspec: 'refs/heads/auto:refs/heads/mirror',
      options: { 'merge_request.create': '', 'merge_request.target': 'main' },
    });
    assert.equal(r.pushed, true);
    assert.equal(await server.revParse(name, 'refs/heads/auto'), sha);
    assert.equal(await server.revParse(name, 'refs/heads/mirror'), sha);
    assert.equal(
      await readFile(join(server.repoPath(name), 'push-options'), 'utf8'),
      'merge_request.create\nmerge_request.target=main\n',
    );
    await assert.rejects(push(ws, { refspec: '+refs/heads/main:refs/heads/x' }), /force refspecs/);
  });

  test('a tag checkout needs a push branch', async () => {
    const { name, ws: _ws } = await setup();
    await server.tag(name, 'v1', (await server.revParse(name, 'refs/heads/main'))!);
    const ws = await openWorkspace({
      stateDir: state.dir,
      repo: gitRepository(server.cloneUrl(name), { name }),
      secret: creds,
      ref: { tag: 'v1' },
      log: silentLogger,
    });
    await bumpTo('7.0.0')(ws);
    await assert.rejects(push(ws), /set spec\.git\.push\.branch/);
    const r = await push(ws, { branch: 'from-tag' });
    assert.equal(r.pushed, true);
  });

  test('bad credentials at push time: GitError about authentication without the password', async () => {
    const { ws } = await setup();
    await bumpTo('8.0.0')(ws);
    server.setUser('bot', 'rotated-password');
    try {
      await assert.rejects(push(ws), (err: unknown) => {
        assert.ok(err instanceof GitError);
        assert.equal(err.failure, 'auth');
        assert.match(err.message, /authentication failed/);
        assert.ok(!`${err.message}${err.stderr}${err.command}`.includes(PASSWORD));
        return true;
      });
    } finally {
      server.setUser('bot', PASSWORD);
    }
  });
});
