import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync, readFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { execFileSync } from 'node:child_process';
import { lineHistory, releasedSince, type MarkedLine } from '../../src/git/history.js';
import { findMarkers } from '../../src/write/setters/markers.js';
import {
  rollbackTrailers,
  releaseTrailers,
  TRAILER_POLICY,
  trailerValues,
} from '../../src/guard/trailers.js';

function repo(t: { after: (fn: () => void) => void }): {
  dir: string;
  write: (f: string, s: string) => void;
  commit: (msg: string, who?: string, date?: string) => string;
  git: (...a: string[]) => string;
} {
  const dir = mkdtempSync(join(tmpdir(), 'pawl-history-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const env = { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' };
  const git = (...a: string[]) => execFileSync('git', a, { cwd: dir, env, encoding: 'utf8' });
  git('init', '-q', '-b', 'main');
  git('config', 'user.name', 'Automation');
  git('config', 'user.email', 'bot@example.com');
  return {
    dir,
    git,
    write: (f, s) => {
      mkdirSync(dirname(join(dir, f)), { recursive: true });
      writeFileSync(join(dir, f), s);
    },
    commit: (msg, who, date) => {
      git('add', '-A');
      const args = ['commit', '-q', '-m', msg];
      if (who) args.push(`--author=${who} <${who.toLowerCase().replace(/\s+/g, '.')}@example.com>`);
      const e = date ? { GIT_COMMITTER_DATE: date, GIT_AUTHOR_DATE: date } : {};
      execFileSync('git', args, { cwd: dir, env: { ...env, ...e }, encoding: 'utf8' });
      return git('rev-parse', 'HEAD').trim();
    },
  };
}

const deploy = (tag: string, extraAbove = '') => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
${extraAbove}spec:
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/org/app:${tag} # {"$imagepolicy": "apps:app"}
`;

function marked(dir: string, file: string): MarkedLine[] {
  return findMarkers(readFileSync(join(dir, file), 'utf8'), file).markers.map((m) => ({
    line: m.line,
    setter: m.setter,
    field: m.field,
    value: m.value,
  }));
}

for (const method of ['auto', 'blame'] as const) {
  async function only(dir: string, file: string) {
    const lines = marked(dir, file);
    assert.equal(lines.length, 1);
    const h = await lineHistory(dir, [{ file, lines }], { method });
    return h.get(file)!.get(lines[0]!.line)!;
  }

  describe(`lineHistory (${method})`, () => {
    test('a person committing an older tag: the change and the value before it', async (t) => {
      const r = repo(t);
      r.write('apps/app.yaml', deploy('1.2.0'));
      r.commit('add app');
      r.write('apps/app.yaml', deploy('1.3.0'));
      const forward = r.commit('automation: 1.3.0');
      r.write('apps/app.yaml', deploy('1.2.0'));
      const back = r.commit('roll back app, 1.3.0 is broken', 'Jane Doe', '2026-11-01T10:00:00Z');
      const c = await only(r.dir, 'apps/app.yaml');
      assert.equal(c.commit, back);
      assert.equal(c.parent, forward);
      assert.equal(c.value, 'ghcr.io/org/app:1.2.0');
      assert.equal(c.previous, 'ghcr.io/org/app:1.3.0');
      assert.equal(c.author.name, 'Jane Doe');
      assert.equal(c.author.email, 'jane.doe@example.com');
      assert.equal(c.subject, 'roll back app, 1.3.0 is broken');
      assert.equal(c.time.toISOString(), '2026-11-01T10:00:00.000Z');
      assert.equal(c.setter, 'apps:app');
      assert.equal(c.field, 'image');
    });

    test('a forward move reports the older value as previous', async (t) => {
      const r = repo(t);
      r.write('a.yaml', deploy('1.0.0'));
      r.commit('add');
      r.write('a.yaml', deploy('1.1.0'));
      const up = r.commit('up');
      const c = await only(r.dir, 'a.yaml');
      assert.equal(c.commit, up);
      assert.equal(c.previous, 'ghcr.io/org/app:1.0.0');
      assert.equal(c.value, 'ghcr.io/org/app:1.1.0');
    });

    test('a line added by its commit has no previous value', async (t) => {
      const r = repo(t);
      r.write('a.yaml', 'kind: ConfigMap\n');
      r.commit('first');
      r.write('a.yaml', deploy('0.9.0'));
      const added = r.commit('add deployment with an old tag');
      const c = await only(r.dir, 'a.yaml');
      assert.equal(c.commit, added);
      assert.equal(c.previous, null);
    });

    test('a line of the root commit has no previous value', async (t) => {
      const r = repo(t);
      r.write('a.yaml', deploy('0.9.0'));
      const root = r.commit('first');
      const c = await only(r.dir, 'a.yaml');
      assert.equal(c.commit, root);
      assert.equal(c.previous, null);
      assert.equal(c.parent, null);
    });

    test('an unrelated edit above the line moves it but does not change its history', async (t) => {
      const r = repo(t);
      r.write('a.yaml', deploy('2.0.0'));
      r.commit('add');
      r.write('a.yaml', deploy('1.9.0'));
      const back = r.commit('back', 'Jane Doe');
      r.write('a.yaml', deploy('1.9.0', '  labels:\n    team: x\n    tier: web\n'));
      r.commit('labels');
      const lines = marked(r.dir, 'a.yaml');
      assert.equal(lines[0]!.line, 13);
      const c = await only(r.dir, 'a.yaml');
      assert.equal(c.commit, back);
      assert.equal(c.line, 13);
      assert.equal(c.previous, 'ghcr.io/org/app:2.0.0');
    });

    test('a changed line that also moved (lines inserted above in the same commit)', async (t) => {
      const r = repo(t);
      r.write('a.yaml', deploy('2.0.0'));
      r.commit('add');
      r.write('a.yaml', deploy('1.0.0', '  labels:\n    x: y\n'));
      const c0 = r.commit('back and label');
      const c = await only(r.dir, 'a.yaml');
      assert.equal(c.commit, c0);
      assert.equal(c.previous, 'ghcr.io/org/app:2.0.0');
    });

    test('several markers in one file, several files, one call; trailers of a rollback commit', async (t) => {
      const r = repo(t);
      const two = (a: string, b: string) =>
        `image: ghcr.io/org/a:${a} # {"$imagepolicy": "apps:a"}\nother:\n  tag: "${b}" # {"$imagepolicy": "apps:b:tag"}\n`;
      r.write('x.yaml', two('1.0.0', '5.0.0'));
      r.write('y.yaml', deploy('3.0.0'));
      r.commit('add');
      r.write('x.yaml', two('1.0.0', '4.0.0'));
      r.write('y.yaml', deploy('2.0.0'));
      const rb = r.commit(
        `Roll back\n\n${rollbackTrailers({ policy: 'apps/b', old: '5.0.0', new: '4.0.0', reason: 'broken\nlogin' })}`,
      );
      const h = await lineHistory(
        r.dir,
        [
          { file: 'x.yaml', lines: marked(r.dir, 'x.yaml') },
          { file: 'y.yaml', lines: marked(r.dir, 'y.yaml') },
        ],
        { method },
      );
      const x = h.get('x.yaml')!;
      assert.equal(x.get(1)!.previous, null, 'unchanged since it was added');
      const b = x.get(3)!;
      assert.equal(b.commit, rb);
      assert.equal(b.previous, '5.0.0');
      assert.equal(b.value, '4.0.0');
      assert.deepEqual(trailerValues(b.trailers, TRAILER_POLICY), ['apps/b']);
      assert.deepEqual(trailerValues(b.trailers, 'Pawl-Reason'), ['broken login']);
      assert.equal(h.get('y.yaml')!.get(10)!.previous, 'ghcr.io/org/app:3.0.0');
    });

    test('a file not committed yet has no history', async (t) => {
      const r = repo(t);
      r.write('a.yaml', 'x: 1\n');
      r.commit('first');
      r.write('new.yaml', deploy('1.0.0'));
      const h = await lineHistory(r.dir, [{ file: 'new.yaml', lines: marked(r.dir, 'new.yaml') }], {
        method,
      });
      assert.equal(h.get('new.yaml')!.get(10), null);
    });

    test('two markers of one file changed by one commit, one forwards and one back; CRLF line endings', async (t) => {
      const r = repo(t);
      const two = (a: string, b: string) =>
        `a:\r\n  image: ghcr.io/org/a:${a} # {"$imagepolicy": "apps:a"}\r\nb:\r\n  image: ghcr.io/org/b:${b} # {"$imagepolicy": "apps:b"}\r\n`;
      r.write('x.yaml', two('1.0.0', '5.0.0'));
      r.commit('add');
      r.write('x.yaml', two('1.1.0', '4.0.0'));
      const c = r.commit('both');
      const lines = marked(r.dir, 'x.yaml');
      const h = (await lineHistory(r.dir, [{ file: 'x.yaml', lines }], { method })).get('x.yaml')!;
      assert.deepEqual(
        [h.get(2)!.commit, h.get(2)!.previous, h.get(2)!.value],
        [c, 'ghcr.io/org/a:1.0.0', 'ghcr.io/org/a:1.1.0'],
      );
      assert.deepEqual([h.get(4)!.commit, h.get(4)!.previous], [c, 'ghcr.io/org/b:5.0.0']);
    });

    test('identical marked lines in one file (two containers, one policy): each gets its own change', async (t) => {
      const r = repo(t);
      const two = (a: string, b: string) =>
        `- image: ghcr.io/org/a:${a} # {"$imagepolicy": "apps:a"}\n- image: ghcr.io/org/a:${b} # {"$imagepolicy": "apps:a"}\n`;
      r.write('x.yaml', two('1.0.0', '1.0.0'));
      const first = r.commit('add');
      r.write('x.yaml', two('2.0.0', '1.0.0'));
      r.commit('first up');
      r.write('x.yaml', two('2.0.0', '2.0.0'));
      const second = r.commit('second up');
      r.write('x.yaml', two('1.5.0', '2.0.0'));
      const back = r.commit('first back');
      const h = (
        await lineHistory(r.dir, [{ file: 'x.yaml', lines: marked(r.dir, 'x.yaml') }], { method })
      ).get('x.yaml')!;
      assert.deepEqual([h.get(1)!.commit, h.get(1)!.previous], [back, 'ghcr.io/org/a:2.0.0']);
      assert.deepEqual([h.get(2)!.commit, h.get(2)!.previous], [second, 'ghcr.io/org/a:1.0.0']);
      r.write('x.yaml', two('2.0.0', '2.0.0'));
      r.commit('same again');
      const same = (
        await lineHistory(r.dir, [{ file: 'x.yaml', lines: marked(r.dir, 'x.yaml') }], { method })
      ).get('x.yaml')!;
      assert.equal(same.get(2)!.commit, second, 'duplicate texts fall back to blame, which tells them apart');
      assert.notEqual(same.get(1)!.commit, first);
    });

    test('committed and uncommitted files in one call, texts handed in', async (t) => {
      const r = repo(t);
      r.write('a.yaml', deploy('1.0.0'));
      r.commit('first');
      r.write('a.yaml', deploy('0.5.0'));
      const back = r.commit('back');
      r.write('new.yaml', deploy('1.0.0'));
      const req = (f: string) => ({
        file: f,
        lines: marked(r.dir, f),
        text: readFileSync(join(r.dir, f), 'utf8'),
      });
      const h = await lineHistory(r.dir, [req('new.yaml'), req('a.yaml')], { method });
      assert.equal(h.get('new.yaml')!.get(10), null);
      assert.deepEqual(
        [h.get('a.yaml')!.get(10)!.commit, h.get('a.yaml')!.get(10)!.previous],
        [back, 'ghcr.io/org/app:1.0.0'],
      );
      // Said to be a clean checkout when it is not (new.yaml is not in HEAD): no ls-tree is asked,
      // line-log refuses the batch, and blame gives the same answer.
      assert.deepEqual(
        await lineHistory(r.dir, [req('new.yaml'), req('a.yaml')], { method, checkedOut: true }),
        h,
      );
    });

    test('releasedSince finds a Pawl-Release commit after the pin', async (t) => {
      const r = repo(t);
      r.write('a.yaml', deploy('1.0.0'));
      const pin = r.commit('pin');
      assert.equal(await releasedSince(r.dir, pin, 'apps/app'), false);
      r.git('commit', '-q', '--allow-empty', '-m', `release\n\n${releaseTrailers(['apps/other'])}`);
      assert.equal(await releasedSince(r.dir, pin, 'apps/app'), false);
      r.git('commit', '-q', '--allow-empty', '-m', `release\n\n${releaseTrailers(['apps/app'])}`);
      assert.equal(await releasedSince(r.dir, pin, 'apps/app'), true);
    });
  });
}
