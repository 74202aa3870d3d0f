/**
 * What a process knows of its own last commit (src/git/known.ts) is what git would answer: the
 * marked line's last change that `lineHistory` gives from memory at pawl's fast-import commit
 * equals git's own `log -L` answer, field by field; a message whose trailers git must parse is
 * not answered from memory; and a remote moved by a person (a hand-committed newer tag, the
 * ratchet's case) is another commit, whose history git is asked for.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { GitServer } from '../helpers/git-server.js';
import { openWorkspace, type Workspace } from '../../src/git/workspace.js';
import { commit } from '../../src/git/commit.js';
import { lineHistory, type MarkedLine } from '../../src/git/history.js';
import { knownAt, knownLine, plainTrailers, subjectOf } from '../../src/git/known.js';
import { SmallMap } from '../../src/util/small-map.js';
import type { FileLines } from '../../src/git/known.js';
import { findMarkers } from '../../src/write/setters/markers.js';
import { silentLogger } from '../../src/util/log.js';
import { gitRepository, gitSuite, type TempDir } from './fixtures.js';

const FILE = 'apps/app.yaml';
const deploy = (tag: string) =>
  `kind: Deployment\nspec:\n  containers:\n    - name: app\n      image: ghcr.io/org/app:${tag} # {"$imagepolicy": "apps:app"}\n`;
const author = { name: ' "Flux Bot". ', email: 'fluxbot@example.com' };

describe("a file's known lines", () => {
  const change = {
    previous: null,
    commit: 'c'.repeat(40),
    parent: 'p'.repeat(40),
    author: { name: 'pawl', email: 'pawl@example.com' },
    authorTime: new Date(0),
    time: new Date(0),
    subject: 'update',
    trailers: [],
  };
  const line = (text: string) => knownLine(text, 'flux-system:app', change);

  test('one line held in place, a second and a third beside it, a line replaced', () => {
    const lines: FileLines = new SmallMap();
    assert.equal(lines.size, 0);
    assert.equal(lines.get(1), undefined);
    const a = line('image: a:1');
    lines.set(7, a);
    assert.deepEqual([lines.size, lines.get(7), lines.get(1), lines.get(0)], [1, a, undefined, undefined]);
    const a2 = line('image: a:2');
    lines.set(7, a2);
    assert.deepEqual([lines.size, lines.get(7)], [1, a2], 'the same line again replaces it');
    const b = line('image: b:1');
    const c = line('image: c:1');
    lines.set(3, b);
    lines.set(12, c);
    assert.deepEqual(
      [lines.size, lines.get(7), lines.get(3), lines.get(12), lines.get(1)],
      [3, a2, b, c, undefined],
    );
    const b2 = line('image: b:2');
    lines.set(3, b2);
    assert.deepEqual([lines.size, lines.get(3), lines.get(7)], [3, b2, a2]);
  });
});

describe('subjects and trailers as git prints them', () => {
  test("%s: the first paragraph's lines, trailing white space dropped, joined by spaces", () => {
    assert.equal(subjectOf('Update images\n\nbody\n'), 'Update images');
    assert.equal(subjectOf('\n\nUpdate  \nthe images\t\n\nbody'), 'Update the images');
  });

  test('plain trailers only: a title, then a last paragraph of Key: value lines, nothing git reads otherwise', () => {
    assert.equal(
      plainTrailers('Update\n\nPawl-Updated: apps/app\nPawl-Automation:apps/fleet\n'),
      'Pawl-Updated: apps/app\nPawl-Automation: apps/fleet',
    );
    for (const m of [
      'Pawl-Updated: apps/app\n', // no title: git never reads the first paragraph as trailers
      'Update\n\nnot a trailer\nPawl-Updated: apps/app\n', // git's 25 % rule decides
      'Update\n\nPawl-Updated: apps/app\n  continued\n', // a folded trailer
      'Update\n# a comment line\n\nPawl-Updated: apps/app\n',
      'Update\n---\nPawl-Updated: apps/app\n',
      'Update\n\nPawl-Updated: apps/app \n', // trailing space
    ])
      assert.equal(plainTrailers(m), null, JSON.stringify(m));
  });
});

describe("the last change of a line pawl's own commit rewrote", () => {
  let server: GitServer;
  let state: TempDir;
  let n = 0;

  gitSuite((s, t) => ((server = s), (state = t)));

  async function workspace(): Promise<{ ws: Workspace; name: string }> {
    const name = `k${++n}`;
    await server.createBareRepo(name, { [FILE]: deploy('1.0.0') });
    const ws = await openWorkspace({
      stateDir: state.dir,
      repo: gitRepository(server.cloneUrl(name), { name }),
      log: silentLogger,
    });
    return { ws, name };
  }

  /** Rewrites the marker to `tag` and commits it as a pass does (the lines it rewrites named). */
  async function pawlCommit(ws: Workspace, tag: string, message: string): Promise<string> {
    const before = await readFile(join(ws.dir, FILE), 'utf8');
    const line = marked(before)[0]!;
    await writeFile(join(ws.dir, FILE), deploy(tag));
    const sha = await commit(ws, {
      message,
      author,
      trailers: { 'Pawl-Updated': 'apps/app' },
      automation: 'apps/fleet',
      date: new Date('2026-12-03T07:00:00.750Z'),
      files: [FILE],
      lines: [
        { file: FILE, line: line.line, setter: line.setter, before: before.split('\n')[line.line - 1]! },
      ],
    });
    assert.ok(sha);
    return sha;
  }

  const marked = (text: string): MarkedLine[] =>
    findMarkers(text, FILE).markers.map((m) => ({
      line: m.line,
      setter: m.setter,
      field: m.field,
      value: m.value,
    }));

  /** The line's history at HEAD: `head` given, memory may answer; without it, git does. */
  async function history(ws: Workspace, head?: string) {
    const text = await readFile(join(ws.dir, FILE), 'utf8');
    const lines = marked(text);
    const h = await lineHistory(ws.dir, [{ file: FILE, text, lines }], {
      checkedOut: true,
      ...(head ? { head } : {}),
    });
    return h.get(FILE)!.get(lines[0]!.line)!;
  }

  test("answered from memory at pawl's commit, and the answer is git's, field by field", async () => {
    const { ws } = await workspace();
    const sha = await pawlCommit(ws, '1.1.0', 'Update images  \nof the fleet\n\nSome body text.\n');
    assert.ok(knownAt(ws.dir, sha)?.lines.get(FILE)?.size === 1, 'the line is known at the commit');
    const fromMemory = await history(ws, sha);
    const fromGit = await history(ws);
    assert.equal(fromMemory.commit, sha);
    assert.equal(fromMemory.previous, 'ghcr.io/org/app:1.0.0');
    assert.deepEqual(fromMemory, fromGit);
  });

  test('a message whose trailers git must read is not answered from memory; git answers, the same way', async () => {
    const { ws } = await workspace();
    const sha = await pawlCommit(
      ws,
      '1.1.0',
      'Update\n\nnot a trailer line\nSigned-off-by: Some One <one@example.com>\n',
    );
    assert.equal(knownAt(ws.dir, sha)?.lines.get(FILE), undefined);
    const h = await history(ws, sha);
    assert.equal(h.commit, sha);
    // What git said is kept for the next pass at this commit.
    assert.equal(knownAt(ws.dir, sha)?.lines.get(FILE)?.size, 1);
    assert.deepEqual(await history(ws, sha), await history(ws));
  });

  test("a person's newer tag committed on top is another commit: git is asked, and the guard sees the person's change", async () => {
    const { ws, name } = await workspace();
    const sha = await pawlCommit(ws, '1.1.0', 'Update\n');
    // pawl's commit pushed, then a person commits 1.3.0 by hand on the remote.
    await ws.remoteGit(['push', '--quiet', 'origin', `${sha}:refs/heads/main`]);
    await server.commitFiles(name, 'main', { [FILE]: deploy('1.3.0') }, { message: 'by hand' });
    await ws.refresh();
    assert.notEqual(ws.head, sha);
    assert.equal(knownAt(ws.dir, ws.head), undefined, 'nothing is known at the commit the person made');
    const h = await history(ws, ws.head);
    assert.equal(h.commit, ws.head);
    assert.equal(h.previous, 'ghcr.io/org/app:1.1.0');
    assert.equal(h.value, 'ghcr.io/org/app:1.3.0');
  });

  test("what is known at a commit keeps neither the file nor git's output", async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const { ws } = await workspace();
    // The marked line, then 6 MB of other lines in the same file.
    const big = (tag: string) => deploy(tag) + `    # ${'x'.repeat(100)}\n`.repeat(60_000);
    await writeFile(join(ws.dir, FILE), big('1.0.0'));
    const first = await commit(ws, { message: 'Grow\n', author, files: [FILE] });
    assert.ok(first);
    // V8 keeps the last regular expression match's input; another match lets go of it. A few
    // turns of the event loop let go of what a finished git process's listeners still held.
    const collect = async () => {
      for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
      /x/.exec('x');
      gc();
    };
    const kept = async (step: () => Promise<unknown>): Promise<number> => {
      await collect();
      const before = process.memoryUsage().heapUsed;
      await step();
      await collect();
      return process.memoryUsage().heapUsed - before;
    };
    // Once without learning (no head given): what the first call compiles is not counted.
    await history(ws);
    // git's answer, learnt at the commit (history.ts).
    const learnt = await kept(() => history(ws, first));
    assert.equal(knownAt(ws.dir, first)?.lines.get(FILE)?.size, 1);
    // pawl's own commit, remembered as it is made (fast-commit.ts).
    let second = '';
    const remembered = await kept(async () => {
      const text = await readFile(join(ws.dir, FILE), 'utf8');
      const line = marked(text)[0]!;
      await writeFile(join(ws.dir, FILE), big('1.1.0'));
      second =
        (await commit(ws, {
          message: 'Update\n',
          author,
          trailers: { 'Pawl-Updated': 'apps/app' },
          automation: 'apps/fleet',
          files: [FILE],
          lines: [
            { file: FILE, line: line.line, setter: line.setter, before: text.split('\n')[line.line - 1]! },
          ],
        })) ?? '';
    });
    assert.equal(knownAt(ws.dir, second)?.lines.get(FILE)?.size, 1);
    const MB = 1024 * 1024;
    assert.ok(learnt < MB, `learning git's answer kept ${(learnt / MB).toFixed(1)} MB`);
    assert.ok(remembered < MB, `remembering pawl's commit kept ${(remembered / MB).toFixed(1)} MB`);
  });
});
