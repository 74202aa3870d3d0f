import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, readdir, writeFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { runGit, startGitServer, type GitServer } from '../helpers/git-server.js';
import { openWorkspace } from '../../src/git/workspace.js';
import { withWorkspace } from '../../src/git/workspace-lock.js';
import { GitError } from '../../src/git/exec.js';
import { silentLogger } from '../../src/util/log.js';
import { captureLogger, gitRepository, secret, tempDir } from './fixtures.js';

const PASSWORD = 'hunter2-very-secret';

describe('workspace over smart HTTP with Basic auth', () => {
  let server: GitServer;
  let state: { dir: string; cleanup: () => Promise<void> };
  const creds = secret('git-creds', { username: 'alice', password: PASSWORD });

  before(async () => {
    server = await startGitServer({ users: { alice: PASSWORD } });
    state = await tempDir();
    const first = await server.createBareRepo('app', {
      'deploy.yaml': 'image: app:1.0.0\n',
      'README.md': 'hello\n',
    });
    await server.tag('app', 'v1.0.0', first);
    const second = await server.commitFiles(
      'app',
      'main',
      { 'deploy.yaml': 'image: app:1.1.0\n' },
      { message: 'bump' },
    );
    await server.tag('app', 'v1.1.0', second);
    await server.tag('app', 'v2.0.0-rc.1', second);
    await server.commitFiles(
      'app',
      'release',
      { 'deploy.yaml': 'image: app:0.9.0\n' },
      { from: first, message: 'release branch' },
    );
  });
  after(async () => {
    await server.close();
    await state.cleanup();
  });

  test('clones the default branch, authenticating without putting the password anywhere', async () => {
    const cap = captureLogger();
    const repo = gitRepository(server.cloneUrl('app'), { name: 'default-branch', secretRef: 'git-creds' });
    const ws = await openWorkspace({ stateDir: state.dir, repo, secret: creds, log: cap.log });
    assert.equal(ws.branch, 'main');
    assert.deepEqual(ws.ref, { kind: 'branch', branch: 'main' });
    assert.equal(ws.head, await server.revParse('app', 'refs/heads/main'));
    assert.equal(await readFile(join(ws.dir, 'deploy.yaml'), 'utf8'), 'image: app:1.1.0\n');
    assert.equal(ws.dir, join(state.dir, 'git', 'flux-system', 'default-branch'));
    assert.ok(
      server.requests.some((r) => r.user === 'alice'),
      'the server saw the credentials',
    );
    // Nothing about the credentials in the workspace's config or the logs.
    const config = await readFile(join(ws.dir, '.git', 'config'), 'utf8');
    assert.ok(!config.includes(PASSWORD) && !config.includes('alice'));
    assert.ok(!cap.text().includes(PASSWORD));
    // Temporary credential files are gone.
    const tmp = await readdir(join(state.dir, 'git', '.tmp')).catch(() => []);
    assert.deepEqual(tmp, []);
    const askpass = await stat(join(state.dir, 'git', 'askpass.sh'));
    assert.equal(askpass.mode & 0o777, 0o700);
  });

  test('fetches into the existing workspace, and wipes local edits and untracked files', async () => {
    const repo = gitRepository(server.cloneUrl('app'), { name: 'reuse', ref: { branch: 'main' } });
    const ws1 = await openWorkspace({ stateDir: state.dir, repo, secret: creds, log: silentLogger });
    await writeFile(join(ws1.dir, 'deploy.yaml'), 'edited\n');
    await writeFile(join(ws1.dir, 'junk.txt'), 'junk\n');
    await ws1.git(['-c', 'user.name=x', '-c', 'user.email=x@x', 'commit', '-qam', 'local only']);
    const marker = join(ws1.dir, '.git', 'pawl-test-marker');
    await writeFile(marker, 'same clone');
    const newer = await server.commitFiles(
      'app',
      'main',
      { 'other.txt': 'new\n' },
      { message: 'someone else' },
    );

    const ws2 = await openWorkspace({ stateDir: state.dir, repo, secret: creds, log: silentLogger });
    assert.equal(ws2.head, newer);
    assert.equal(await readFile(join(ws2.dir, 'deploy.yaml'), 'utf8'), 'image: app:1.1.0\n');
    assert.equal(await readFile(join(ws2.dir, 'other.txt'), 'utf8'), 'new\n');
    await assert.rejects(stat(join(ws2.dir, 'junk.txt')));
    assert.equal(await readFile(marker, 'utf8'), 'same clone', 'not cloned again');
    assert.deepEqual(await ws2.status(), []);
  });

  test('checks out a tag, a commit, a semver range and another branch', async () => {
    const tagWs = await openWorkspace({
      stateDir: state.dir,
      repo: gitRepository(server.cloneUrl('app'), { name: 'refs' }),
      secret: creds,
      ref: { tag: 'v1.0.0' },
      log: silentLogger,
    });
    assert.equal(tagWs.branch, null);
    assert.equal(await readFile(join(tagWs.dir, 'deploy.yaml'), 'utf8'), 'image: app:1.0.0\n');

    const first = await server.revParse('app', 'refs/tags/v1.0.0');
    const commitWs = await openWorkspace({
      stateDir: state.dir,
      repo: gitRepository(server.cloneUrl('app'), { name: 'refs' }),
      secret: creds,
      ref: { commit: first! },
      log: silentLogger,
    });
    assert.equal(commitWs.head, first);
    assert.deepEqual(commitWs.ref, { kind: 'commit', commit: first });

    const semverWs = await openWorkspace({
      stateDir: state.dir,
      repo: gitRepository(server.cloneUrl('app'), { name: 'refs' }),
      secret: creds,
      ref: { semver: '>=1.0.0 <2.0.0' },
      log: silentLogger,
    });
    assert.deepEqual(semverWs.ref, { kind: 'semver', range: '>=1.0.0 <2.0.0', tag: 'v1.1.0' });
    assert.equal(semverWs.head, await server.revParse('app', 'refs/tags/v1.1.0'));

    // The automation's ref wins over the repository's.
    const branchWs = await openWorkspace({
      stateDir: state.dir,
      repo: gitRepository(server.cloneUrl('app'), { name: 'refs', ref: { branch: 'main' } }),
      secret: creds,
      ref: { branch: 'release' },
      log: silentLogger,
    });
    assert.equal(branchWs.branch, 'release');
    assert.equal(await readFile(join(branchWs.dir, 'deploy.yaml'), 'utf8'), 'image: app:0.9.0\n');
  });

  test('follows the remote default branch when the remembered one is gone', async () => {
    await server.createBareRepo('renamed', { 'a.yaml': 'on master\n' }, { branch: 'master' });
    const repo = gitRepository(server.cloneUrl('renamed'), { name: 'renamed' });
    assert.equal(
      (await openWorkspace({ stateDir: state.dir, repo, secret: creds, log: silentLogger })).branch,
      'master',
    );
    await server.commitFiles('renamed', 'main', { 'a.yaml': 'on main\n' }, { from: 'refs/heads/master' });
    await runGit(['symbolic-ref', 'HEAD', 'refs/heads/main'], server.repoPath('renamed'));
    await runGit(['update-ref', '-d', 'refs/heads/master'], server.repoPath('renamed'));
    const ws = await openWorkspace({ stateDir: state.dir, repo, secret: creds, log: silentLogger });
    assert.equal(ws.branch, 'main');
    assert.equal(await readFile(join(ws.dir, 'a.yaml'), 'utf8'), 'on main\n');
  });

  test('the head is the fetched commit with packed refs, on the remote and in the workspace', async () => {
    const bare = server.repoPath('app');
    const main = (await server.revParse('app', 'refs/heads/main'))!;
    await runGit(['update-ref', 'refs/heads/packed', main], bare);
    await runGit(['pack-refs', '--all'], bare);
    const repo = gitRepository(server.cloneUrl('app'), { name: 'packed', ref: { branch: 'packed' } });
    const first = await openWorkspace({ stateDir: state.dir, repo, secret: creds, log: silentLogger });
    assert.equal(first.head, main);
    // git's own housekeeping packs the workspace's refs too (gc --auto); then the remote moves.
    await runGit(['pack-refs', '--all'], first.dir);
    const moved = await server.commitFiles('app', 'packed', { 'deploy.yaml': 'image: app:1.2.0\n' });
    await runGit(['pack-refs', '--all'], bare);
    const ws = await openWorkspace({ stateDir: state.dir, repo, secret: creds, log: silentLogger });
    assert.equal(ws.head, moved);
    assert.equal(ws.base, moved);
    assert.equal((await ws.git(['rev-parse', 'HEAD'])).stdout.trim(), moved);
    assert.equal(await readFile(join(ws.dir, 'deploy.yaml'), 'utf8'), 'image: app:1.2.0\n');
  });

  test('a missing branch is a clear not-found error', async () => {
    const repo = gitRepository(server.cloneUrl('app'), { name: 'missing', ref: { branch: 'nope' } });
    await assert.rejects(
      openWorkspace({ stateDir: state.dir, repo, secret: creds, log: silentLogger }),
      (err: unknown) => {
        assert.ok(err instanceof GitError);
        assert.equal(err.failure, 'not-found');
        assert.match(err.message, /branch nope not found/);
        return true;
      },
    );
  });

  test('bad credentials: a GitError about authentication, nothing about the password; next run works', async () => {
    const wrong = 'wrong-password-123';
    const bad = secret('git-creds', { username: 'alice', password: wrong });
    const cap = captureLogger();
    const repo = gitRepository(server.cloneUrl('app'), { name: 'badcreds', ref: { branch: 'main' } });
    await assert.rejects(
      openWorkspace({ stateDir: state.dir, repo, secret: bad, log: cap.log }),
      (err: unknown) => {
        assert.ok(err instanceof GitError);
        assert.equal(err.failure, 'auth');
        assert.match(err.message, /authentication failed/i);
        const all = `${err.message}\n${err.stderr}\n${err.command}\n${err.stack ?? ''}`;
        assert.ok(!all.includes(wrong), 'the password is not in the error');
        assert.ok(!all.includes(PASSWORD));
        return true;
      },
    );
    assert.ok(!cap.text().includes(wrong));
    // Nothing half-made is left that would confuse the next run.
    const entries = await readdir(join(state.dir, 'git', 'flux-system'));
    assert.ok(!entries.some((e) => e.includes('badcreds')), `left: ${entries.join(', ')}`);
    const ws = await openWorkspace({ stateDir: state.dir, repo, secret: creds, log: silentLogger });
    assert.equal(ws.branch, 'main');

    // And with an existing workspace, failing auth keeps it for the next run.
    await assert.rejects(
      openWorkspace({ stateDir: state.dir, repo, secret: bad, log: silentLogger }),
      /authentication failed/,
    );
    await stat(join(ws.dir, '.git', 'HEAD'));
    const again = await openWorkspace({ stateDir: state.dir, repo, secret: creds, log: silentLogger });
    assert.equal(again.head, await server.revParse('app', 'refs/heads/main'));
  });

  test('no credentials for a server that wants them: authentication error', async () => {
    const repo = gitRepository(server.cloneUrl('app'), { name: 'nocreds' });
    await assert.rejects(openWorkspace({ stateDir: state.dir, repo, log: silentLogger }), (err: unknown) => {
      assert.ok(err instanceof GitError);
      assert.equal(err.failure, 'auth');
      return true;
    });
  });

  test('a broken workspace is detected and cloned again', async () => {
    const repo = gitRepository(server.cloneUrl('app'), { name: 'broken', ref: { branch: 'main' } });
    const ws = await openWorkspace({ stateDir: state.dir, repo, secret: creds, log: silentLogger });
    // A crash mid-operation: stale locks, and the object store gone.
    await writeFile(join(ws.dir, '.git', 'index.lock'), '');
    await rm(join(ws.dir, '.git', 'objects'), { recursive: true, force: true });
    await mkdir(join(ws.dir, '.git', 'objects'));
    const cap = captureLogger();
    const again = await openWorkspace({ stateDir: state.dir, repo, secret: creds, log: cap.log });
    assert.equal(again.head, await server.revParse('app', 'refs/heads/main'));
    assert.equal(await readFile(join(again.dir, 'deploy.yaml'), 'utf8'), 'image: app:1.1.0\n');

    // A directory that is not a repository at all (e.g. an interrupted rename).
    await rm(join(again.dir, '.git'), { recursive: true, force: true });
    const third = await openWorkspace({ stateDir: state.dir, repo, secret: creds, log: silentLogger });
    assert.equal(third.branch, 'main');

    // Only stale locks: removed, the clone is kept.
    const marker = join(third.dir, '.git', 'pawl-test-marker');
    await writeFile(marker, 'kept');
    await writeFile(join(third.dir, '.git', 'index.lock'), '');
    await writeFile(join(third.dir, '.git', 'refs', 'heads', 'main.lock'), '');
    const fourth = await openWorkspace({ stateDir: state.dir, repo, secret: creds, log: silentLogger });
    assert.equal(await readFile(marker, 'utf8'), 'kept');
    assert.equal(fourth.branch, 'main');
  });

  test('a changed URL means a new clone', async () => {
    await server.createBareRepo('other', { 'x.yaml': 'other\n' });
    const name = 'moved';
    await openWorkspace({
      stateDir: state.dir,
      repo: gitRepository(server.cloneUrl('app'), { name }),
      secret: creds,
      log: silentLogger,
    });
    const ws = await openWorkspace({
      stateDir: state.dir,
      repo: gitRepository(server.cloneUrl('other'), { name }),
      secret: creds,
      log: silentLogger,
    });
    assert.equal(await readFile(join(ws.dir, 'x.yaml'), 'utf8'), 'other\n');
  });

  test("withWorkspace serialises passes on one workspace and takes over a dead process's lock", async () => {
    const repo = gitRepository(server.cloneUrl('app'), { name: 'locked' });
    // A lock file left by a process that no longer exists.
    await mkdir(join(state.dir, 'git', 'flux-system'), { recursive: true });
    await writeFile(join(state.dir, 'git', 'flux-system', 'locked.lock'), '999999999\n');
    let active = 0;
    let maxActive = 0;
    const order: string[] = [];
    const pass = (label: string) =>
      withWorkspace({ stateDir: state.dir, repo, secret: creds, log: silentLogger }, async (ws) => {
        active++;
        maxActive = Math.max(maxActive, active);
        order.push(`start ${label}`);
        await writeFile(join(ws.dir, 'deploy.yaml'), `${label}\n`);
        await new Promise((r) => setTimeout(r, 50));
        assert.equal(await readFile(join(ws.dir, 'deploy.yaml'), 'utf8'), `${label}\n`);
        order.push(`end ${label}`);
        active--;
        return label;
      });
    const results = await Promise.all([pass('a'), pass('b'), pass('c')]);
    assert.deepEqual(results, ['a', 'b', 'c']);
    assert.equal(maxActive, 1);
    assert.deepEqual(order, ['start a', 'end a', 'start b', 'end b', 'start c', 'end c']);
    await assert.rejects(stat(join(state.dir, 'git', 'flux-system', 'locked.lock')));
  });

  test('status, changedFiles and diff', async () => {
    const repo = gitRepository(server.cloneUrl('app'), { name: 'status' });
    const ws = await openWorkspace({ stateDir: state.dir, repo, secret: creds, log: silentLogger });
    await writeFile(join(ws.dir, 'deploy.yaml'), 'image: app:9.9.9\n');
    assert.deepEqual(await ws.changedFiles(), ['deploy.yaml']);
    assert.deepEqual(await ws.status(), [{ code: ' M', path: 'deploy.yaml' }]);
    const diff = await ws.diff();
    assert.match(diff, /-image: app:1\.1\.0\n\+image: app:9\.9\.9/);
  });
});

describe('workspace failures without a server', () => {
  test('unreachable server: a clear error, and nothing half-made', async () => {
    const server = await startGitServer();
    await server.createBareRepo('gone', { 'a.yaml': 'a\n' });
    const url = server.cloneUrl('gone');
    const state = await tempDir();
    try {
      const repo = gitRepository(url, { name: 'gone' });
      const ws = await openWorkspace({ stateDir: state.dir, repo, log: silentLogger });
      await server.close();
      await assert.rejects(
        openWorkspace({ stateDir: state.dir, repo, log: silentLogger }),
        (err: unknown) => {
          assert.ok(err instanceof GitError);
          assert.equal(err.failure, 'unreachable');
          assert.match(err.message, /unreachable/);
          return true;
        },
      );
      // The existing workspace survives for the next run.
      await stat(join(ws.dir, '.git', 'HEAD'));
      const fresh = gitRepository(url, { name: 'never-cloned' });
      await assert.rejects(
        openWorkspace({ stateDir: state.dir, repo: fresh, log: silentLogger }),
        /unreachable/,
      );
      const entries = await readdir(join(state.dir, 'git', 'flux-system'));
      assert.deepEqual(entries.sort(), ['gone']);
    } finally {
      await state.cleanup();
    }
  });

  test('a server that never answers: timeout after spec.timeout, no git left running', async () => {
    const { createServer } = await import('node:net');
    const sockets: import('node:net').Socket[] = [];
    const hang = createServer((sock) => {
      sockets.push(sock);
      sock.resume();
      sock.on('error', () => undefined);
    });
    await new Promise<void>((r) => hang.listen(0, '127.0.0.1', r));
    const port = (hang.address() as import('node:net').AddressInfo).port;
    const state = await tempDir();
    try {
      const repo = gitRepository(`http://127.0.0.1:${port}/slow.git`, { name: 'slow' });
      repo.spec.timeout = 1000;
      await assert.rejects(
        openWorkspace({ stateDir: state.dir, repo, log: silentLogger }),
        (err: unknown) => {
          assert.ok(err instanceof GitError);
          assert.equal(err.failure, 'timeout');
          assert.match(err.message, /timed out after 1s/);
          return true;
        },
      );
      // The git helper that held the connection was stopped with git.
      for (let i = 0; i < 50 && !sockets.every((s) => s.destroyed); i++)
        await new Promise((r) => setTimeout(r, 100));
      assert.ok(
        sockets.length > 0 && sockets.every((s) => s.destroyed),
        'the connection was closed by the client',
      );
    } finally {
      for (const s of sockets) s.destroy();
      hang.close();
      await state.cleanup();
    }
  });

  test('a bearer token is sent as a header, never in the URL or config', async () => {
    const token = 'tok-abcdef-123456';
    const server = await startGitServer({ tokens: [token] });
    const state = await tempDir();
    try {
      await server.createBareRepo('bearer', { 'a.yaml': 'a\n' });
      const repo = gitRepository(server.cloneUrl('bearer'), { name: 'bearer' });
      const ws = await openWorkspace({
        stateDir: state.dir,
        repo,
        secret: secret('tok', { bearerToken: token }),
        log: silentLogger,
      });
      assert.equal(ws.branch, 'main');
      assert.ok(server.requests.every((r) => r.user === 'token'));
      assert.ok(!(await readFile(join(ws.dir, '.git', 'config'), 'utf8')).includes(token));
      await assert.rejects(
        openWorkspace({
          stateDir: state.dir,
          repo,
          secret: secret('tok', { bearerToken: 'tok-wrong-99999' }),
          log: silentLogger,
        }),
        (err: unknown) =>
          err instanceof GitError && err.failure === 'auth' && !err.message.includes('tok-wrong-99999'),
      );
    } finally {
      await server.close();
      await state.cleanup();
    }
  });

  test('file:// URLs and local paths need no credentials', async () => {
    const server = await startGitServer();
    const state = await tempDir();
    try {
      await server.createBareRepo('local', { 'a.yaml': 'local\n' });
      const viaFile = await openWorkspace({
        stateDir: state.dir,
        repo: gitRepository(`file://${server.repoPath('local')}`, { name: 'file' }),
        log: silentLogger,
      });
      assert.equal(await readFile(join(viaFile.dir, 'a.yaml'), 'utf8'), 'local\n');
      const viaPath = await openWorkspace({
        stateDir: state.dir,
        repo: gitRepository(server.repoPath('local'), { name: 'path' }),
        log: silentLogger,
      });
      assert.equal(viaPath.branch, 'main');
    } finally {
      await server.close();
      await state.cleanup();
    }
  });
});
