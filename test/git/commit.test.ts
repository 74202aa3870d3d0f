import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { startGitServer, type GitServer } from '../helpers/git-server.js';
import { generateSshKey } from '../helpers/sshd.js';
import { gpgKey } from '../helpers/gpg.js';
import { openWorkspace, type Workspace } from '../../src/git/workspace.js';
import { commit, PAWL_AUTOMATION_TRAILER } from '../../src/git/commit.js';
import { ConfigError } from '../../src/util/errors.js';
import { silentLogger } from '../../src/util/log.js';
import { gitRepository, secret, tempDir } from './fixtures.js';

const author = { name: 'Flux Bot', email: 'fluxbot@example.com' };

describe('commit', () => {
  let server: GitServer;
  let state: { dir: string; cleanup: () => Promise<void> };
  let scratch: { dir: string; cleanup: () => Promise<void> };
  let n = 0;

  async function freshWorkspace(): Promise<Workspace> {
    n++;
    await server.createBareRepo(`c${n}`, { 'apps/a.yaml': 'image: a:1\n', 'apps/b.yaml': 'image: b:1\n' });
    return openWorkspace({
      stateDir: state.dir,
      repo: gitRepository(server.cloneUrl(`c${n}`), { name: `c${n}` }),
      log: silentLogger,
    });
  }

  async function gitOut(ws: Workspace, args: string[], env: Record<string, string> = {}): Promise<string> {
    return (await ws.git(args, { env })).stdout;
  }

  before(async () => {
    server = await startGitServer();
    state = await tempDir();
    scratch = await tempDir('pawl-keys-');
  });
  after(async () => {
    await server.close();
    await state.cleanup();
    await scratch.cleanup();
  });

  test('nothing changed: null, no commit', async () => {
    const ws = await freshWorkspace();
    const before = ws.head;
    assert.equal(await commit(ws, { message: 'x', author }), null);
    assert.equal((await gitOut(ws, ['rev-parse', 'HEAD'])).trim(), before);
  });

  test('author, committer, message verbatim and trailers', async () => {
    const ws = await freshWorkspace();
    await writeFile(join(ws.dir, 'apps/a.yaml'), 'image: a:2\n');
    const message = 'Update images\n\n# not a comment: kept verbatim\n- apps/a.yaml\n';
    const sha = await commit(ws, {
      message,
      author,
      trailers: {
        'Pawl-Policy': ['flux-system/a', 'flux-system/b'],
        'Signed-off-by': 'Flux Bot <fluxbot@example.com>',
      },
      automation: 'flux-system/auto',
      date: new Date('2024-05-01T10:00:00Z'),
    });
    assert.ok(sha);
    assert.equal(ws.head, sha);
    const fields = (await gitOut(ws, ['log', '-1', '--format=%an|%ae|%cn|%ce|%aI'])).trim();
    assert.equal(
      fields,
      'Flux Bot|fluxbot@example.com|Flux Bot|fluxbot@example.com|2024-05-01T10:00:00+00:00',
    );
    const body = await gitOut(ws, ['log', '-1', '--format=%B']);
    assert.ok(body.startsWith(message), body);
    const trailers = (await gitOut(ws, ['log', '-1', '--format=%(trailers:only,unfold)'])).trim().split('\n');
    assert.deepEqual(trailers, [
      'Pawl-Policy: flux-system/a',
      'Pawl-Policy: flux-system/b',
      'Signed-off-by: Flux Bot <fluxbot@example.com>',
      `${PAWL_AUTOMATION_TRAILER}: flux-system/auto`,
    ]);
    assert.deepEqual(await ws.status(), []);
  });

  test('a distinct committer, and only the files given', async () => {
    const ws = await freshWorkspace();
    await writeFile(join(ws.dir, 'apps/a.yaml'), 'image: a:3\n');
    await writeFile(join(ws.dir, 'apps/b.yaml'), 'image: b:3\n');
    const sha = await commit(ws, {
      message: 'only a',
      author,
      committer: { name: 'Pawl', email: 'pawl@example.com' },
      files: ['apps/a.yaml'],
    });
    assert.ok(sha);
    assert.equal(
      (await gitOut(ws, ['show', '--name-only', '--format=%cn', 'HEAD'])).trim(),
      'Pawl\n\napps/a.yaml',
    );
    assert.deepEqual(await ws.changedFiles(), ['apps/b.yaml']);
  });

  test('GPG signing with a passphrase-protected key, verified by git', async () => {
    const home = join(scratch.dir, 'gnupg');
    await mkdir(home, { mode: 0o700 });
    const { armored, fpr } = await gpgKey(home, 'open sesame');
    const ws = await freshWorkspace();
    await writeFile(join(ws.dir, 'apps/a.yaml'), 'image: a:4\n');
    const signing = secret('signing', { 'git.asc': armored, passphrase: 'open sesame' });
    const sha = await commit(ws, { message: 'signed', author, signingKey: signing, stateDir: state.dir });
    assert.ok(sha);
    // Verified against the public key in the test's own keyring.
    const out = await ws.git(['verify-commit', '--raw', 'HEAD'], { env: { GNUPGHOME: home } });
    assert.match(out.stderr, new RegExp(`VALIDSIG ${fpr}`));
    const shown = await gitOut(ws, ['log', '-1', '--format=%G?'], { GNUPGHOME: home });
    assert.equal(shown.trim(), 'G');
  });

  test('a wrong GPG passphrase fails the commit and leaves no commit', async () => {
    const home = join(scratch.dir, 'gnupg2');
    await mkdir(home, { mode: 0o700 });
    const { armored } = await gpgKey(home, 'right');
    const ws = await freshWorkspace();
    const before = ws.head;
    await writeFile(join(ws.dir, 'apps/a.yaml'), 'image: a:5\n');
    await assert.rejects(
      commit(ws, {
        message: 'x',
        author,
        signingKey: secret('signing', { 'git.asc': armored, passphrase: 'wrong-pass' }),
      }),
      (err: unknown) => {
        assert.ok(err instanceof Error);
        assert.match(err.message, /sign/i);
        assert.ok(!err.message.includes('wrong-pass'));
        return true;
      },
    );
    assert.equal((await gitOut(ws, ['rev-parse', 'HEAD'])).trim(), before);
  });

  test('SSH signing, verified with an allowed-signers file', async () => {
    const key = await generateSshKey(scratch.dir, 'signer');
    const ws = await freshWorkspace();
    await writeFile(join(ws.dir, 'apps/b.yaml'), 'image: b:6\n');
    const sha = await commit(ws, {
      message: 'ssh signed',
      author,
      signingKey: secret('ssh-signing', { identity: key.privateKey }),
    });
    assert.ok(sha);
    const allowed = join(scratch.dir, 'allowed_signers');
    await writeFile(allowed, `${author.email} ${key.publicKey}`);
    const out = await ws.git(['-c', `gpg.ssh.allowedSignersFile=${allowed}`, 'verify-commit', 'HEAD']);
    assert.match(out.stderr, /Good "git" signature for fluxbot@example.com/);
  });

  test('a signing Secret without a key is a configuration error', async () => {
    const ws = await freshWorkspace();
    await writeFile(join(ws.dir, 'apps/a.yaml'), 'image: a:7\n');
    await assert.rejects(
      commit(ws, { message: 'x', author, signingKey: secret('empty', { foo: 'bar' }) }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.match(err.message, /git\.asc/);
        return true;
      },
    );
    assert.equal(await readFile(join(ws.dir, 'apps/a.yaml'), 'utf8'), 'image: a:7\n');
  });
});
