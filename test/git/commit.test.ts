import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, readFile, writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { startGitServer, type GitServer } from '../helpers/git-server.js';
import { generateSshKey } from '../helpers/sshd.js';
import { gpgKey } from '../helpers/gpg.js';
import { openWorkspace, type Workspace } from '../../src/git/workspace.js';
import { commit, PAWL_AUTOMATION_TRAILER, type CommitOptions } from '../../src/git/commit.js';
import { ConfigError } from '../../src/util/errors.js';
import { silentLogger } from '../../src/util/log.js';
import { gitRepository, gitSuite, secret, tempDir, type TempDir } from './fixtures.js';

const author = { name: 'Flux Bot', email: 'fluxbot@example.com' };

describe('commit', () => {
  let server: GitServer;
  let state: TempDir;
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

describe('commit through fast-import is the commit git makes', () => {
  let server: GitServer;
  let state: TempDir;
  let n = 0;
  const fixed = { GIT_AUTHOR_DATE: '2024-01-01T00:00:00Z', GIT_COMMITTER_DATE: '2024-01-01T00:00:00Z' };
  const initial = {
    'apps/a.yaml': 'image: a:1\n',
    'apps/b.yaml': 'image: b:1\n',
    'apps/with space/"quoted" é.yaml': 'image: q:1\n',
    'apps/run.sh': '#!/bin/sh\n# image: r:1\n',
  };

  /** Two workspaces of one repository, at the same commit: run.sh made executable the same way. */
  async function twins(): Promise<[Workspace, Workspace]> {
    n++;
    await server.createBareRepo(`f${n}`, initial);
    const open = async (name: string): Promise<Workspace> => {
      const ws = await openWorkspace({
        stateDir: state.dir,
        repo: gitRepository(server.cloneUrl(`f${n}`), { name }),
        log: silentLogger,
      });
      await chmod(join(ws.dir, 'apps/run.sh'), 0o755);
      await ws.git(['add', 'apps/run.sh']);
      await ws.git(
        ['-c', 'user.name=Setup', '-c', 'user.email=setup@example.com', 'commit', '-q', '-m', 'exec'],
        {
          env: fixed,
        },
      );
      await ws.updateHead();
      return ws;
    };
    return [await open(`f${n}-fast`), await open(`f${n}-slow`)];
  }

  /** Edits both, commits `files` on the first (fast-import) and everything on the second (git add, git commit). */
  async function both(
    edits: Record<string, string>,
    opts: Omit<CommitOptions, 'files'>,
    files = Object.keys(edits),
  ): Promise<{ fast: string | null; slow: string | null; ws: Workspace; other: Workspace }> {
    const [a, b] = await twins();
    assert.equal(a.head, b.head, 'the twins start at the same commit');
    for (const ws of [a, b])
      for (const [path, text] of Object.entries(edits)) await writeFile(join(ws.dir, path), text);
    const fast = await commit(a, { ...opts, files });
    const slow = await commit(b, opts);
    return { fast, slow, ws: a, other: b };
  }

  gitSuite((s, t) => ((server = s), (state = t)));

  const cases: { name: string; edits: Record<string, string>; opts: Omit<CommitOptions, 'files'> }[] = [
    {
      name: 'trailers, the automation trailer and a date with milliseconds',
      edits: { 'apps/a.yaml': 'image: a:2\n', 'apps/b.yaml': 'image: b:2\n' },
      opts: {
        message: 'Update images\n\n# kept verbatim\n- apps/a.yaml\n',
        author,
        trailers: { 'Pawl-Updated': ['flux-system/a', 'flux-system/b'] },
        automation: 'flux-system/auto',
        date: new Date('2024-05-01T10:00:00.789Z'),
      },
    },
    {
      name: 'a message without a final newline, a distinct committer',
      edits: { 'apps/a.yaml': 'image: a:3\n' },
      opts: {
        message: 'one line',
        author,
        committer: { name: 'Pawl', email: 'pawl@example.com' },
        date: new Date('2024-05-02T00:00:00Z'),
      },
    },
    {
      name: 'an empty message with a trailer',
      edits: { 'apps/b.yaml': 'image: b:4\n' },
      opts: { message: '', author, automation: 'ns/auto', date: new Date('2024-05-03T00:00:00Z') },
    },
    {
      name: 'names and emails git trims, a blank name',
      edits: { 'apps/a.yaml': 'image: a:5\n' },
      opts: {
        message: 'x\n',
        author: { name: ' "Flux. <Bot>\'; ', email: ' <fluxbot@example.com>. ' },
        committer: { name: '  ', email: 'ci@example.com' },
        date: new Date('2024-05-04T00:00:00Z'),
      },
    },
    {
      name: 'quoted, spaced and non-ASCII paths, an executable file, non-ASCII text',
      edits: {
        'apps/with space/"quoted" é.yaml': 'image: q:2 # ünïcode\n',
        'apps/run.sh': '#!/bin/sh\n# image: r:2\n',
      },
      opts: { message: 'Ünïcode ✓\n', author, date: new Date('2024-05-05T00:00:00Z') },
    },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const { fast, slow, ws, other } = await both(c.edits, c.opts);
      assert.ok(fast && slow);
      const show = async (w: Workspace, sha: string) =>
        (await w.git(['cat-file', 'commit', sha])).stdout + (await w.git(['ls-tree', '-r', sha])).stdout;
      assert.equal(await show(ws, fast), await show(other, slow));
      assert.equal(fast, slow, 'the same commit object, byte for byte');
      assert.equal(ws.head, fast);
      assert.equal((await ws.git(['rev-parse', 'HEAD'])).stdout.trim(), fast, 'HEAD is where ws.head says');
      assert.deepEqual(await ws.status(), [], 'index and working tree match the new commit');
    });
  }

  test('a file given but unchanged is left out; none changed is null', async () => {
    const { fast, slow } = await both(
      { 'apps/a.yaml': 'image: a:6\n' },
      { message: 'x\n', author, date: new Date(0) },
      ['apps/a.yaml', 'apps/b.yaml'],
    );
    assert.ok(fast);
    assert.equal(fast, slow);
    const [ws] = await twins();
    assert.equal(await commit(ws, { message: 'x', author, files: ['apps/a.yaml'] }), null);
  });

  test('150 files are committed as one pack, not a loose object per blob and tree', async () => {
    n++;
    const many = Object.fromEntries(
      Array.from({ length: 150 }, (_, i) => [`apps/app-${i}/d.yaml`, `image: a:${i}\n`]),
    );
    await server.createBareRepo(`f${n}`, many);
    const ws = await openWorkspace({
      stateDir: state.dir,
      repo: gitRepository(server.cloneUrl(`f${n}`), { name: `f${n}` }),
      log: silentLogger,
    });
    const objects = async () =>
      Object.fromEntries(
        (await ws.git(['count-objects', '-v'])).stdout
          .trim()
          .split('\n')
          .map((l) => l.split(': ') as [string, string]),
      );
    const before = await objects();
    for (const [path, text] of Object.entries(many))
      await writeFile(join(ws.dir, path), text.replace('a:', 'b:'));
    const sha = await commit(ws, { message: 'many\n', author, files: Object.keys(many) });
    assert.ok(sha);
    const after = await objects();
    assert.equal(after.count, before.count, 'no loose objects written');
    assert.equal(Number(after.packs), Number(before.packs) + 1);
    assert.equal(
      (await ws.git(['diff', '--name-only', `${sha}~1`, sha])).stdout.trim().split('\n').length,
      150,
    );
    assert.deepEqual(await ws.status(), []);
  });

  test('with .gitattributes git commits it, so its conversions apply', async () => {
    n++;
    await server.createBareRepo(`f${n}`, { ...initial, '.gitattributes': '*.yaml text\n' });
    const ws = await openWorkspace({
      stateDir: state.dir,
      repo: gitRepository(server.cloneUrl(`f${n}`), { name: `f${n}` }),
      log: silentLogger,
    });
    await writeFile(join(ws.dir, 'apps/a.yaml'), 'image: a:7\r\nkind: x\r\n');
    const sha = await commit(ws, { message: 'crlf\n', author, files: ['apps/a.yaml'] });
    assert.ok(sha);
    // git's `text` attribute stores LF: fast-import, which applies no attributes, would have kept CR.
    assert.equal((await ws.git(['show', `${sha}:apps/a.yaml`])).stdout, 'image: a:7\nkind: x\n');
  });

  test('with .git/info/attributes too', async () => {
    n++;
    await server.createBareRepo(`f${n}`, initial);
    const ws = await openWorkspace({
      stateDir: state.dir,
      repo: gitRepository(server.cloneUrl(`f${n}`), { name: `f${n}` }),
      log: silentLogger,
    });
    await mkdir(join(ws.dir, '.git', 'info'), { recursive: true });
    await writeFile(join(ws.dir, '.git', 'info', 'attributes'), '*.yaml text\n');
    await writeFile(join(ws.dir, 'apps/b.yaml'), 'image: b:8\r\n');
    const sha = await commit(ws, { message: 'crlf\n', author, files: ['apps/b.yaml'] });
    assert.ok(sha);
    assert.equal((await ws.git(['show', `${sha}:apps/b.yaml`])).stdout, 'image: b:8\n');
  });
});
