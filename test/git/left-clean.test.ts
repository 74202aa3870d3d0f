/**
 * A workspace a pass left clean (src/git/known.ts, `LeftClean`): the next checkout of the same
 * branch, with the remote still at the commit it was left at and nothing having touched the
 * index, runs neither `checkout` nor `clean`; anything else checks out as before. A file written
 * into the working tree behind git's back (no index write) tells the two apart: `clean` removes
 * it, a skipped checkout leaves it, which is why only the pass that committed everything it
 * wrote says the workspace is clean.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { access, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { GitServer } from '../helpers/git-server.js';
import { openWorkspace, type Workspace } from '../../src/git/workspace.js';
import { commit } from '../../src/git/commit.js';
import type { GitRef } from '../../src/config/types.js';
import { silentLogger } from '../../src/util/log.js';
import { gitRepository, gitSuite, type TempDir } from './fixtures.js';

const execFileP = promisify(execFile);
const FILE = 'apps/app.yaml';
const STRAY = 'stray.txt';
const deploy = (tag: string) => `kind: Deployment\nimage: ghcr.io/org/app:${tag}\n`;

describe('a workspace left clean by the last pass', () => {
  let server: GitServer;
  let state: TempDir;
  let n = 0;

  gitSuite((s, t) => ((server = s), (state = t)));

  const open = (name: string, ref?: GitRef): Promise<Workspace> =>
    openWorkspace({
      stateDir: state.dir,
      repo: gitRepository(server.cloneUrl(name), { name, ...(ref ? { ref } : {}) }),
      log: silentLogger,
    });

  const present = (ws: Workspace, file: string): Promise<boolean> =>
    access(join(ws.dir, file)).then(
      () => true,
      () => false,
    );

  /**
   * A pass as the daemon's ends: pawl's commit pushed, the workspace said clean; then a file
   * appears behind git's back (only a skipped clean leaves it there).
   */
  async function passLeftClean(): Promise<{ name: string; ws: Workspace; sha: string }> {
    const name = `lc${++n}`;
    await server.createBareRepo(name, { [FILE]: deploy('1.0.0') });
    const ws = await open(name);
    await writeFile(join(ws.dir, FILE), deploy('1.1.0'));
    const sha = await commit(ws, {
      message: 'Update\n',
      author: { name: 'pawl', email: 'pawl@example.com' },
      date: new Date('2026-12-03T13:00:00Z'),
      files: [FILE],
    });
    assert.ok(sha);
    await ws.remoteGit(['push', '--quiet', 'origin', `HEAD:refs/heads/main`]);
    await ws.leaveClean();
    await writeFile(join(ws.dir, STRAY), 'written behind git\n');
    return { name, ws, sha };
  }

  test('the remote still at the commit it was left at: no checkout, HEAD where the pass left it', async () => {
    const { name, sha } = await passLeftClean();
    const again = await open(name);
    assert.equal(again.head, sha);
    assert.equal(again.base, sha);
    assert.equal(again.branch, 'main');
    assert.deepEqual(again.ref, { kind: 'branch', branch: 'main' });
    assert.ok(await present(again, STRAY), 'neither checkout nor clean ran');
    // What git itself says of the workspace agrees: HEAD and the branch at the commit, and the
    // only change the file written behind its back.
    assert.equal((await again.git(['rev-parse', 'HEAD'])).stdout.trim(), sha);
    assert.deepEqual(await again.status(), [{ code: '??', path: STRAY }]);
  });

  test('taken once: a pass that does not say so again is followed by a checkout', async () => {
    const { name, sha } = await passLeftClean();
    const second = await open(name);
    assert.ok(await present(second, STRAY));
    // This pass ends without leaveClean (it failed, ran dry, or proposed a pull request).
    const third = await open(name);
    assert.equal(third.head, sha);
    assert.equal(await present(third, STRAY), false, 'checked out and cleaned');
  });

  test('a remote that moved (a person committed) is checked out', async () => {
    const { name, sha } = await passLeftClean();
    const person = await server.commitFiles(
      name,
      'main',
      { [FILE]: deploy('1.3.0') },
      { message: 'by hand' },
    );
    const again = await open(name);
    assert.notEqual(again.head, sha);
    assert.equal(again.head, person);
    assert.equal(await present(again, STRAY), false);
  });

  test('an index another git command wrote (another process in the workspace) is checked out', async () => {
    const { name, ws } = await passLeftClean();
    await execFileP('git', ['read-tree', 'HEAD'], { cwd: ws.dir });
    const again = await open(name);
    assert.equal(await present(again, STRAY), false);
  });

  test('another branch wanted is checked out', async () => {
    const { name, sha } = await passLeftClean();
    await server.commitFiles(name, 'other', { [FILE]: deploy('2.0.0') }, { message: 'other' });
    const again = await open(name, { branch: 'other' });
    assert.equal(again.branch, 'other');
    assert.notEqual(again.head, sha);
    assert.equal(await present(again, STRAY), false);
  });

  test('a detached checkout says nothing', async () => {
    const { name, sha } = await passLeftClean();
    const detached = await open(name, { commit: sha });
    assert.equal(detached.branch, null);
    await detached.leaveClean();
    await writeFile(join(detached.dir, STRAY), 'again\n');
    const again = await open(name);
    assert.equal(again.head, sha);
    assert.equal(await present(again, STRAY), false);
  });

  test('known whole: no repair runs; a lock left there anyway costs a fresh clone, not a failed pass', async () => {
    const { name, ws } = await passLeftClean();
    // pawl is the only writer of its workspaces, and a git it stopped would have cost the note:
    // a lock placed by hand is not looked for, and stays while nothing needs it.
    const lock = join(ws.dir, '.git', 'refs', 'remotes', 'origin', 'main.lock');
    await writeFile(lock, '');
    const quiet = await open(name);
    assert.ok(await present(quiet, join('.git', 'refs', 'remotes', 'origin', 'main.lock')));
    // The remote moves: the fetch cannot update the ref past the lock, fails, and the workspace is
    // cloned again; the pass goes on at the remote's commit.
    const person = await server.commitFiles(
      name,
      'main',
      { [FILE]: deploy('1.4.0') },
      { message: 'by hand' },
    );
    const again = await open(name);
    assert.equal(again.head, person);
    assert.equal(await present(again, join('.git', 'refs', 'remotes', 'origin', 'main.lock')), false);
  });

  test('known whole for its URL only: another URL for the same GitRepository is checked and cloned', async () => {
    const { name, ws } = await passLeftClean();
    const other = `lc${++n}`;
    await server.createBareRepo(other, { [FILE]: deploy('9.0.0') });
    const moved = await openWorkspace({
      stateDir: state.dir,
      repo: gitRepository(server.cloneUrl(other), { name }),
      log: silentLogger,
    });
    assert.equal(moved.dir, ws.dir);
    assert.equal(
      (await moved.git(['config', '--get', 'remote.origin.url'])).stdout.trim(),
      server.cloneUrl(other),
    );
    assert.equal(await present(moved, STRAY), false);
  });

  test('a fetch that failed costs the note: the next open repairs what a stopped fetch may have left', async () => {
    const { name, ws } = await passLeftClean();
    const bare = server.repoPath(name);
    await rename(bare, `${bare}.away`);
    await assert.rejects(open(name));
    await rename(`${bare}.away`, bare);
    // What a fetch stopped midway leaves, and a mark that only a fresh clone would lose.
    await writeFile(join(ws.dir, '.git', 'refs', 'remotes', 'origin', 'main.lock'), '');
    await writeFile(join(ws.dir, '.git', 'pawl-test-mark'), '');
    const person = await server.commitFiles(
      name,
      'main',
      { [FILE]: deploy('1.5.0') },
      { message: 'by hand' },
    );
    const again = await open(name);
    assert.equal(again.head, person);
    assert.ok(await present(again, join('.git', 'pawl-test-mark')), 'repaired, not cloned again');
  });
});
