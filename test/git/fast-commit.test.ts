/**
 * The fast-import commit (src/git/fast-commit.ts) where it must not be taken, or must not move
 * HEAD: what `git commit` would record differently from the index's view (a symlink, a changed
 * executable bit, a file not tracked yet, a nested .gitattributes), and a HEAD moved by someone
 * else while the commit was being written. Each is checked in the commit git recorded.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, symlink, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { GitServer } from '../helpers/git-server.js';
import { openWorkspace, type Workspace } from '../../src/git/workspace.js';
import { commit } from '../../src/git/commit.js';
import { blobId, commitFast, identPart, quotePath } from '../../src/git/fast-commit.js';
import { silentLogger } from '../../src/util/log.js';
import { gitRepository, gitSuite, type TempDir } from './fixtures.js';

const author = { name: 'Flux Bot', email: 'fluxbot@example.com' };
const setupEnv = {
  GIT_AUTHOR_NAME: 'Setup',
  GIT_AUTHOR_EMAIL: 'setup@example.com',
  GIT_COMMITTER_NAME: 'Setup',
  GIT_COMMITTER_EMAIL: 'setup@example.com',
};

describe("fast-import's inputs, as git writes them", () => {
  test("paths C-style quoted (fast-import's syntax): quote, backslash, newline, control and non-ASCII bytes", () => {
    const table: [string, string][] = [
      ['apps/a.yaml', '"apps/a.yaml"'],
      ['with space/a.yaml', '"with space/a.yaml"'],
      ['say "hi".yaml', '"say \\"hi\\".yaml"'],
      ['back\\slash', '"back\\\\slash"'],
      ['new\nline', '"new\\nline"'],
      ['tab\there', '"tab\\011here"'],
      ['del\u007f', '"del\\177"'],
      ['é', '"\\303\\251"'],
    ];
    for (const [path, quoted] of table) assert.equal(quotePath(path), quoted, JSON.stringify(path));
  });

  test("names and emails trimmed of the characters git's ident.c trims; <, > and newlines dropped", () => {
    const table: [string, string][] = [
      ['Flux Bot', 'Flux Bot'],
      ['  "Flux Bot".  ', 'Flux Bot'],
      ["'Flux', ", 'Flux'],
      [';:Flux\\', 'Flux'],
      ['<fluxbot@example.com>', 'fluxbot@example.com'],
      ['Fl<u>x\nBot', 'FluxBot'],
      ['Dr. Flux', 'Dr. Flux'],
      ['..', ''],
    ];
    for (const [raw, stored] of table) assert.equal(identPart(raw), stored, JSON.stringify(raw));
  });

  test('blob ids as git hash-object computes them, SHA-1 and SHA-256 repositories', () => {
    assert.equal(blobId(Buffer.from(''), 40), 'e69de29bb2d1d6434b8b29ae775ad8c2e48c5391');
    assert.equal(blobId(Buffer.from('hello\n'), 40), 'ce013625030ba8dba906f756967f9e9ca394464a');
    assert.equal(
      blobId(Buffer.from(''), 64),
      '473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813',
    );
    assert.equal(
      blobId(Buffer.from('hello\n'), 64),
      '2cf8d83d9ee29543b34a87727421fdecb7e3f3a183d337639025de576db9ebb4',
    );
  });
});

describe('fast-import commits only what git would commit', () => {
  let server: GitServer;
  let state: TempDir;
  let n = 0;

  async function workspace(files: Record<string, string> = {}): Promise<Workspace> {
    n++;
    await server.createBareRepo(`s${n}`, {
      'apps/a.yaml': 'image: a:1\n',
      'apps/b.yaml': 'image: b:1\n',
      ...files,
    });
    return openWorkspace({
      stateDir: state.dir,
      repo: gitRepository(server.cloneUrl(`s${n}`), { name: `s${n}` }),
      log: silentLogger,
    });
  }
  const out = async (ws: Workspace, args: string[]): Promise<string> => (await ws.git(args)).stdout;
  /** `MODE TYPE` of a path in a commit, and its blob's text. */
  const entry = async (ws: Workspace, sha: string, path: string): Promise<[string, string]> => {
    const [mode] = (await out(ws, ['ls-tree', sha, '--', path])).split(' ');
    return [mode!, await out(ws, ['cat-file', 'blob', `${sha}:${path}`])];
  };
  const setupCommit = async (ws: Workspace, message: string): Promise<void> => {
    await ws.git(['commit', '-q', '--no-gpg-sign', '-m', message], { env: setupEnv });
    await ws.updateHead();
  };

  gitSuite((s, t) => ((server = s), (state = t)));

  test('a tracked symlink pointed elsewhere is committed as a symlink (120000) to its new target', async () => {
    const ws = await workspace();
    await symlink('a.yaml', join(ws.dir, 'apps/link.yaml'));
    await ws.git(['add', 'apps/link.yaml']);
    await setupCommit(ws, 'link');
    await unlink(join(ws.dir, 'apps/link.yaml'));
    await symlink('b.yaml', join(ws.dir, 'apps/link.yaml'));
    const sha = await commit(ws, { message: 'retarget\n', author, files: ['apps/link.yaml'] });
    assert.ok(sha);
    assert.deepEqual(await entry(ws, sha, 'apps/link.yaml'), ['120000', 'b.yaml']);
    assert.deepEqual(await entry(ws, sha, 'apps/b.yaml'), ['100644', 'image: b:1\n']);
    assert.deepEqual(await ws.status(), []);
  });

  test('a regular file replaced by a symlink is committed as the symlink, not as its target', async () => {
    const ws = await workspace();
    await unlink(join(ws.dir, 'apps/a.yaml'));
    await symlink('b.yaml', join(ws.dir, 'apps/a.yaml'));
    const sha = await commit(ws, { message: 'link\n', author, files: ['apps/a.yaml'] });
    assert.ok(sha);
    assert.deepEqual(await entry(ws, sha, 'apps/a.yaml'), ['120000', 'b.yaml']);
  });

  test('an executable bit set since the last commit is committed (100755), as git does', async () => {
    const ws = await workspace();
    await writeFile(join(ws.dir, 'apps/a.yaml'), 'image: a:2\n');
    await chmod(join(ws.dir, 'apps/a.yaml'), 0o755);
    const sha = await commit(ws, { message: 'exec\n', author, files: ['apps/a.yaml'] });
    assert.ok(sha);
    assert.deepEqual(await entry(ws, sha, 'apps/a.yaml'), ['100755', 'image: a:2\n']);
    assert.deepEqual(await ws.status(), []);
  });

  test('an executable file edited stays executable; one made non-executable is committed so', async () => {
    const ws = await workspace();
    await chmod(join(ws.dir, 'apps/a.yaml'), 0o755);
    await chmod(join(ws.dir, 'apps/b.yaml'), 0o755);
    await ws.git(['add', 'apps']);
    await setupCommit(ws, 'exec');
    await writeFile(join(ws.dir, 'apps/a.yaml'), 'image: a:3\n');
    await writeFile(join(ws.dir, 'apps/b.yaml'), 'image: b:3\n');
    await chmod(join(ws.dir, 'apps/b.yaml'), 0o644);
    const sha = await commit(ws, { message: 'edit\n', author, files: ['apps/a.yaml', 'apps/b.yaml'] });
    assert.ok(sha);
    assert.deepEqual(await entry(ws, sha, 'apps/a.yaml'), ['100755', 'image: a:3\n']);
    assert.deepEqual(await entry(ws, sha, 'apps/b.yaml'), ['100644', 'image: b:3\n']);
    assert.deepEqual(await ws.status(), []);
  });

  test('a file not tracked yet is added', async () => {
    const ws = await workspace();
    await writeFile(join(ws.dir, 'apps/new.yaml'), 'image: n:1\n');
    const sha = await commit(ws, { message: 'new\n', author, files: ['apps/new.yaml'] });
    assert.ok(sha);
    assert.deepEqual(await entry(ws, sha, 'apps/new.yaml'), ['100644', 'image: n:1\n']);
  });

  test('a deleted file is deleted', async () => {
    const ws = await workspace();
    await unlink(join(ws.dir, 'apps/b.yaml'));
    const sha = await commit(ws, { message: 'gone\n', author, files: ['apps/b.yaml'] });
    assert.ok(sha);
    assert.equal(await out(ws, ['ls-tree', sha, '--', 'apps/b.yaml']), '');
    assert.deepEqual(await entry(ws, sha, 'apps/a.yaml'), ['100644', 'image: a:1\n']);
  });

  test('a .gitattributes in a subdirectory applies: git commits, converting CRLF', async () => {
    const ws = await workspace({ 'apps/.gitattributes': '*.yaml text\n' });
    await writeFile(join(ws.dir, 'apps/a.yaml'), 'image: a:4\r\n');
    const sha = await commit(ws, { message: 'crlf\n', author, files: ['apps/a.yaml'] });
    assert.ok(sha);
    assert.equal((await entry(ws, sha, 'apps/a.yaml'))[1], 'image: a:4\n');
  });

  test('an author or committer name git would refuse as empty is refused, as git commit refuses it', async () => {
    const ws = await workspace();
    await writeFile(join(ws.dir, 'apps/a.yaml'), 'image: a:6\n');
    const head = ws.head;
    const dots = { name: '..', email: 'dots@example.com' };
    for (const who of [
      { author: dots, committer: author },
      { author, committer: dots },
    ]) {
      await assert.rejects(
        commit(ws, { message: 'x\n', ...who, files: ['apps/a.yaml'] }),
        /name consists only of disallowed characters/,
      );
    }
    assert.equal((await out(ws, ['rev-parse', 'HEAD'])).trim(), head);
  });

  test('HEAD moved by someone else meanwhile is not moved back over: the commit fails, their commit stays', async () => {
    const ws = await workspace();
    await writeFile(join(ws.dir, 'apps/a.yaml'), 'image: a:5\n');
    let theirs = '';
    await assert.rejects(
      commitFast(ws, ['apps/a.yaml'], {
        author,
        committer: author,
        date: new Date('2024-01-01T00:00:00Z'),
        // The message is asked for after the parent is read: the moment to move HEAD under it.
        message: async () => {
          await ws.git(['commit', '-q', '--no-gpg-sign', '--allow-empty', '-m', 'theirs'], { env: setupEnv });
          theirs = (await out(ws, ['rev-parse', 'HEAD'])).trim();
          return 'ours\n';
        },
      }),
    );
    assert.equal((await out(ws, ['rev-parse', 'HEAD'])).trim(), theirs);
    assert.equal((await out(ws, ['log', '-1', '--format=%s'])).trim(), 'theirs');
    assert.match(
      await out(ws, ['status', '--porcelain']),
      /^ M apps\/a\.yaml$/m,
      'the edit is still uncommitted',
    );
  });
});
