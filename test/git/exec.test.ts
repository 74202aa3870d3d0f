/**
 * How the one git runner (src/git/exec.ts on src/util/process.ts) ends a git that does not end on
 * its own, and says so: a timeout, an abort, a reader that has read enough, git not installed.
 * The hanging git is an alias that runs `sleep` in git's process group.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { git, GitError, gitStream } from '../../src/git/exec.js';

const cwd = mkdtempSync(join(tmpdir(), 'pawl-exec-'));
after(() => rmSync(cwd, { recursive: true, force: true }));
const HANG = ['-c', 'alias.hang=!sleep 600', 'hang'];

describe('the git runner', () => {
  test('a git past its time is stopped with its helpers and named a timeout', async () => {
    await assert.rejects(git(HANG, { cwd, timeoutMs: 1000 }), (err: unknown) => {
      assert.ok(err instanceof GitError);
      assert.equal(err.failure, 'timeout');
      assert.equal(err.gitExitCode, null);
      assert.equal(err.message, 'git -c alias.hang=!sleep 600 hang: timed out after 1s');
      return true;
    });
  });

  test('an abort stops a running git', async () => {
    const controller = new AbortController();
    const running = git(HANG, { cwd, signal: controller.signal });
    controller.abort();
    await assert.rejects(running, (err: unknown) => {
      assert.ok(err instanceof GitError);
      assert.equal(err.message, 'git -c alias.hang=!sleep 600 hang: aborted');
      assert.equal(err.gitExitCode, null);
      return true;
    });
  });

  test('a reader that has read enough stops git, and that is no failure', async () => {
    const alias = ['-c', 'alias.talk=!echo first; exec sleep 600', 'talk'];
    const seen: string[] = [];
    const r = await gitStream(alias, { cwd, onStdout: (text) => (seen.push(text), true) });
    assert.deepEqual(seen, ['first\n']);
    assert.equal(r.stderr, '');
  });

  test('git not on PATH is said in words', async () => {
    await assert.rejects(git(['--version'], { cwd, env: { PATH: join(cwd, 'no-such-dir') } }), {
      name: 'GitError',
      message: 'git is not installed (the `git` command was not found on PATH)',
    });
  });
});
