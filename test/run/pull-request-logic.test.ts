/**
 * The decisions of the pull-request step without a forge (an in-memory one): which pull request
 * is updated, which are closed as superseded or moot, and which are never closed; and the
 * branch names a template renders to.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { closeMoot, pawlMark, propose } from '../../src/run/pull-request.js';
import { sanitizeBranch } from '../../src/run/branch.js';
import { ForgeError, type ForgeClient, type PullRequest } from '../../src/forge/index.js';

const exec = promisify(execFile);
const AUTOMATION = 'flux-system/fleet';

function memoryForge(
  initial: PullRequest[],
): ForgeClient & { pulls: PullRequest[]; comments: [number, string][]; calls: string[] } {
  const pulls = [...initial];
  const comments: [number, string][] = [];
  const calls: string[] = [];
  let next = Math.max(0, ...initial.map((p) => p.number)) + 1;
  return {
    kind: 'gitea',
    pulls,
    comments,
    calls,
    listOpen: async (base) => pulls.filter((p) => p.state === 'open' && p.base === base),
    open: async (pr) => {
      const created: PullRequest = {
        ...pr,
        number: next++,
        url: `https://forge/pulls/${next - 1}`,
        state: 'open',
      };
      pulls.push(created);
      return created;
    },
    update: async (n, fields) => {
      const p = pulls.find((x) => x.number === n)!;
      Object.assign(p, fields);
      return p;
    },
    comment: async (n, body) => void comments.push([n, body]),
    close: async (n) => void (pulls.find((x) => x.number === n)!.state = 'closed'),
    addPeople: async (n, p) =>
      void calls.push(`people #${n} ${p.reviewers.join(',')} ${p.assignees.join(',')}`),
    autoMerge: async (p, method) => {
      calls.push(`auto-merge #${p.number} ${method}`);
      if (method === 'rebase')
        throw new ForgeError('POST /merge: answered 405: rebase is not allowed', 405, false);
    },
  };
}

const pr = (number: number, head: string, body = pawlMark(AUTOMATION)): PullRequest => ({
  number,
  url: `https://forge/pulls/${number}`,
  state: 'open',
  head,
  base: 'main',
  title: 'Update app to 1.1.0',
  body,
  labels: [],
});

const ask = (head: string, mayClose: (b: string) => Promise<boolean> = async () => true) => ({
  automation: AUTOMATION,
  head,
  base: 'main',
  title: 'Update app to 1.2.0',
  body: 'body',
  labels: ['images'],
  draft: false,
  mayClose,
});

describe('propose and close', () => {
  test('a branch per tag: the new pull request is opened and pawl’s older one closed as superseded, with a comment', async () => {
    const forge = memoryForge([pr(1, 'pawl/app-1.1.0'), pr(2, 'someone/else', 'a person’s pull request')]);
    const r = await propose(forge, ask('pawl/app-1.2.0'));
    assert.equal(r.action, 'opened');
    assert.deepEqual(r.closed, [1]);
    assert.deepEqual(
      forge.pulls.map((p) => [p.number, p.state]),
      [
        [1, 'closed'],
        [2, 'open'],
        [3, 'open'],
      ],
      'a pull request without pawl’s mark is never touched',
    );
    assert.match(forge.comments[0]![1], /^Superseded by #3 /);
    assert.ok(forge.pulls[2]!.body.endsWith(pawlMark(AUTOMATION)));
  });

  test('the same branch: its pull request is updated, then left alone when nothing changed', async () => {
    const forge = memoryForge([pr(1, 'pawl/app')]);
    assert.equal((await propose(forge, ask('pawl/app'))).action, 'updated');
    assert.equal(forge.pulls[0]!.title, 'Update app to 1.2.0');
    assert.deepEqual(forge.pulls[0]!.labels, ['images']);
    assert.equal((await propose(forge, ask('pawl/app'))).action, 'unchanged');
    assert.equal(forge.pulls.length, 1);
  });

  test('a pull request whose branch holds a person’s commits is never closed', async () => {
    const forge = memoryForge([pr(1, 'pawl/app')]);
    const r = await propose(
      forge,
      ask('pawl/app-2', async (b) => b !== 'pawl/app'),
    );
    assert.deepEqual(r.closed, []);
    assert.equal(forge.pulls[0]!.state, 'open');
    assert.deepEqual(
      await closeMoot(forge, {
        automation: AUTOMATION,
        base: 'main',
        mayClose: async (b) => b !== 'pawl/app',
      }),
      [2],
    );
    assert.equal(forge.pulls[0]!.state, 'open');
  });

  test('reviewers, assignees and auto-merge are asked once, when the pull request is opened', async () => {
    const forge = memoryForge([]);
    const opts = {
      ...ask('pawl/app'),
      people: { reviewers: ['rita'], assignees: ['ash'] },
      autoMerge: 'squash' as const,
    };
    const r = await propose(forge, opts);
    assert.equal(r.action, 'opened');
    assert.equal(r.note, undefined);
    assert.deepEqual(forge.calls, ['people #1 rita ash', 'auto-merge #1 squash']);
    assert.equal((await propose(forge, { ...opts, title: 'Update app to 1.3.0' })).action, 'updated');
    assert.equal(
      forge.calls.length,
      2,
      'an update leaves a person’s choice of reviewers and auto-merge alone',
    );
  });

  test('a forge refusing auto-merge: the pull request stands, and the report says why', async () => {
    const forge = memoryForge([]);
    const r = await propose(forge, { ...ask('pawl/app'), autoMerge: 'rebase' });
    assert.equal(r.action, 'opened');
    assert.match(r.note ?? '', /^auto-merge could not be enabled on #1: .*405.*rebase is not allowed/);
    assert.equal(forge.pulls[0]!.state, 'open');
  });

  test('moot because the guard holds the lines: the comment says they are held, not that the base has them', async () => {
    const forge = memoryForge([pr(1, 'pawl/app'), pr(2, 'pawl/app-b')]);
    await closeMoot(forge, {
      automation: AUTOMATION,
      base: 'main',
      mayClose: async (b) => b === 'pawl/app',
      held: true,
    });
    await closeMoot(forge, { automation: AUTOMATION, base: 'main', mayClose: async () => true });
    assert.match(forge.comments[0]![1], /^pawl now holds these lines at what main has/);
    assert.doesNotMatch(forge.comments[0]![1], /already has/);
    assert.match(forge.comments[1]![1], /^main already has the values/);
  });

  test('another automation’s pull requests are not this one’s to close', async () => {
    const forge = memoryForge([pr(1, 'pawl/other', pawlMark('flux-system/other'))]);
    assert.deepEqual(
      await closeMoot(forge, { automation: AUTOMATION, base: 'main', mayClose: async () => true }),
      [],
    );
    assert.equal(forge.pulls[0]!.state, 'open');
  });
});

test('a rendered branch is made a valid branch name', async () => {
  for (const [raw, want] of [
    ['pawl/fleet/flux-system:app:tag', 'pawl/fleet/flux-system-app-tag'],
    [' pawl/app 1.2.3+build ', 'pawl/app-1.2.3+build'],
    ['pawl//a..b/.hidden/x.lock', 'pawl/a.b/hidden/x'],
    ['pawl/a~b^c?d*e[f\\g', 'pawl/a-b-c-d-e-f-g'],
    ['pawl/@{now}/', 'pawl/now}'],
  ] as const) {
    assert.equal(sanitizeBranch(raw), want, raw);
    // And git agrees it is a branch name.
    await exec('git', ['check-ref-format', '--branch', want]);
  }
});
