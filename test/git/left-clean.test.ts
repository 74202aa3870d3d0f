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
import { access, writeFile } from 'node:fs/promises';
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
});
