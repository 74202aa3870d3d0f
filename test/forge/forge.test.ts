/**
 * The forge clients without a forge: the backoff on rate limits and 5xx, the errors a person
 * reads, the token kept out of them, and the GitHub and GitLab request sequences (no GitHub or
 * GitLab server runs here; Gitea's client is tested against a real Gitea in
 * test/run/pull-requests.test.ts).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ForgeError, forgeClient, forgeRepo, type Fetch, type ForgeRepo } from '../../src/forge/index.js';

const TOKEN = 'ghp_s3cr3tTOKENvalue0123456789';

interface Seen {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
}

/** A stand-in forge: answers each request from `answer`, and records what was asked. */
function standIn(
  answer: (req: Seen, n: number) => { status: number; body?: unknown; headers?: Record<string, string> },
) {
  const seen: Seen[] = [];
  const fetch: Fetch = async (url, init) => {
    const req: Seen = {
      method: init.method ?? 'GET',
      url,
      headers: Object.fromEntries(Object.entries((init.headers ?? {}) as Record<string, string>)),
      body: init.body === undefined ? undefined : JSON.parse(String(init.body)),
    };
    seen.push(req);
    const a = answer(req, seen.length);
    return new Response(a.body === undefined ? '' : JSON.stringify(a.body), {
      status: a.status,
      headers: a.headers ?? {},
    });
  };
  return { seen, fetch };
}

const gh: ForgeRepo = { kind: 'github', apiUrl: 'https://api.github.com', path: 'org/fleet' };
const pull = (n: number, head = 'pawl/x') => ({
  number: n,
  html_url: `https://github.com/org/fleet/pull/${n}`,
  state: 'open',
  merged_at: null,
  title: 't',
  body: 'b',
  labels: [],
  head: { ref: head },
  base: { ref: 'main' },
});

describe('forge HTTP: backoff and errors', () => {
  test('429 with Retry-After, then success: retried after the time the forge asked', async () => {
    const waits: number[] = [];
    const s = standIn((_, n) =>
      n === 1 ? { status: 429, headers: { 'retry-after': '7' } } : { status: 200, body: [] },
    );
    const c = forgeClient(gh, { fetch: s.fetch, token: TOKEN, sleep: async (ms) => void waits.push(ms) });
    assert.deepEqual(await c.listOpen('main'), []);
    assert.equal(s.seen.length, 2);
    assert.deepEqual(waits, [7000]);
  });

  test('a 403 that is a rate limit is retried; a 403 that is not is reported at once', async () => {
    const limited = standIn((_, n) =>
      n === 1
        ? {
            status: 403,
            body: { message: 'API rate limit exceeded' },
            headers: { 'x-ratelimit-remaining': '0' },
          }
        : { status: 200, body: [] },
    );
    await forgeClient(gh, { fetch: limited.fetch, token: TOKEN, sleep: async () => {} }).listOpen('main');
    assert.equal(limited.seen.length, 2);

    const forbidden = standIn(() => ({
      status: 403,
      body: { message: 'Resource not accessible by integration' },
    }));
    const err = await forgeClient(gh, { fetch: forbidden.fetch, token: TOKEN, sleep: async () => {} })
      .listOpen('main')
      .catch((e: unknown) => e);
    assert.ok(err instanceof ForgeError);
    assert.equal(forbidden.seen.length, 1);
    assert.equal(err.transient, false);
    assert.match(err.message, /forbidden \(403\): the token may lack the scope/);
  });

  test('5xx every time: given up after the attempts, transient, and the token is nowhere in the error', async () => {
    const s = standIn(() => ({ status: 502, body: { message: `bad gateway for ${TOKEN}` } }));
    const err = await forgeClient(gh, { fetch: s.fetch, token: TOKEN, sleep: async () => {}, attempts: 3 })
      .open({ head: 'pawl/x', base: 'main', title: 't', body: 'b', labels: [], draft: false })
      .catch((e: unknown) => e);
    assert.ok(err instanceof ForgeError);
    assert.equal(s.seen.length, 3);
    assert.equal(err.transient, true);
    assert.match(
      err.message,
      /POST https:\/\/api\.github\.com\/repos\/org\/fleet\/pulls: answered 502.*still after 3 attempts/,
    );
    assert.ok(!err.message.includes(TOKEN), err.message);
  });

  test('an answer that is not what the API documents is an error naming the field', async () => {
    const s = standIn(() => ({ status: 200, body: [{ number: 'one' }] }));
    const err = await forgeClient(gh, { fetch: s.fetch, token: TOKEN })
      .listOpen('main')
      .catch((e: unknown) => e);
    assert.ok(err instanceof ForgeError);
    assert.match(err.message, /not what its API documents: 0\.number/);
  });

  test('the token goes only in a header, each forge’s own', async () => {
    for (const [kind, header, value] of [
      ['github', 'authorization', `Bearer ${TOKEN}`],
      ['gitlab', 'private-token', TOKEN],
      ['gitea', 'authorization', `token ${TOKEN}`],
    ] as const) {
      const s = standIn(() => ({ status: 200, body: [] }));
      await forgeClient(
        { kind, apiUrl: 'https://forge.example.com/api', path: 'org/fleet' },
        { fetch: s.fetch, token: TOKEN },
      ).listOpen('main');
      assert.equal(s.seen[0]!.headers[header], value, kind);
      assert.ok(!s.seen[0]!.url.includes(TOKEN), kind);
    }
  });
});

describe('forge requests', () => {
  test('GitHub: list, open with labels and draft, update, comment, close', async () => {
    const s = standIn((req) => {
      if (req.url.includes('/labels')) return { status: 200, body: [{ name: 'images' }] };
      if (req.url.endsWith('/comments')) return { status: 201, body: { id: 1 } };
      if (req.method === 'GET') return { status: 200, body: [pull(3)] };
      return { status: req.method === 'POST' ? 201 : 200, body: pull(4) };
    });
    const c = forgeClient(gh, { fetch: s.fetch, token: TOKEN });
    assert.equal((await c.listOpen('main'))[0]!.number, 3);
    const pr = await c.open({
      head: 'pawl/x',
      base: 'main',
      title: 'T',
      body: 'B',
      labels: ['images'],
      draft: true,
    });
    assert.equal(pr.number, 4);
    await c.update(4, { title: 'T2', body: 'B2', labels: ['images'] });
    await c.comment(3, 'superseded');
    await c.close(3);
    assert.deepEqual(
      s.seen.map((r) => [r.method, r.url.replace('https://api.github.com', ''), r.body]),
      [
        ['GET', '/repos/org/fleet/pulls?state=open&base=main&per_page=100&page=1', undefined],
        [
          'POST',
          '/repos/org/fleet/pulls',
          { title: 'T', head: 'pawl/x', base: 'main', body: 'B', draft: true },
        ],
        ['POST', '/repos/org/fleet/issues/4/labels', { labels: ['images'] }],
        ['PATCH', '/repos/org/fleet/pulls/4', { title: 'T2', body: 'B2' }],
        ['PUT', '/repos/org/fleet/issues/4/labels', { labels: ['images'] }],
        ['POST', '/repos/org/fleet/issues/3/comments', { body: 'superseded' }],
        ['PATCH', '/repos/org/fleet/pulls/3', { state: 'closed' }],
      ],
    );
  });

  test('GitLab: merge requests by the project’s full path, Draft: titles, labels as a list (an array, as its OpenAPI says)', async () => {
    const repo = forgeRepo('https://gitlab.example.com/group/sub/fleet.git', { provider: 'gitlab' });
    assert.ok(typeof repo !== 'string');
    assert.equal(repo.apiUrl, 'https://gitlab.example.com/api/v4');
    const mr = {
      iid: 5,
      web_url: 'https://gitlab.example.com/group/sub/fleet/-/merge_requests/5',
      state: 'opened',
      title: 'T',
      description: 'B',
      labels: ['images'],
      source_branch: 'pawl/x',
      target_branch: 'main',
    };
    const s = standIn((req) =>
      req.url.endsWith('/notes')
        ? { status: 201, body: { id: 9 } }
        : { status: 200, body: req.method === 'GET' ? [mr] : mr },
    );
    const c = forgeClient(repo, { fetch: s.fetch, token: TOKEN });
    const [open] = await c.listOpen('main');
    assert.deepEqual([open!.number, open!.state, open!.head], [5, 'open', 'pawl/x']);
    await c.open({ head: 'pawl/x', base: 'main', title: 'T', body: 'B', labels: ['a', 'b'], draft: true });
    await c.comment(5, 'moot');
    await c.close(5);
    const p = '/api/v4/projects/group%2Fsub%2Ffleet';
    assert.deepEqual(
      s.seen.map((r) => [r.method, r.url.replace('https://gitlab.example.com', ''), r.body]),
      [
        ['GET', `${p}/merge_requests?state=opened&target_branch=main&per_page=100&page=1`, undefined],
        [
          'POST',
          `${p}/merge_requests`,
          {
            source_branch: 'pawl/x',
            target_branch: 'main',
            title: 'Draft: T',
            description: 'B',
            labels: ['a', 'b'],
            remove_source_branch: true,
          },
        ],
        ['POST', `${p}/merge_requests/5/notes`, { body: 'moot' }],
        ['PUT', `${p}/merge_requests/5`, { state_event: 'close' }],
      ],
    );
  });

  test('which forge and API from the repository URL', () => {
    const cases: [string, Parameters<typeof forgeRepo>[1], ForgeRepo | RegExp][] = [
      [
        'https://github.com/org/fleet.git',
        {},
        { kind: 'github', apiUrl: 'https://api.github.com', path: 'org/fleet' },
      ],
      [
        'git@github.com:org/fleet.git',
        {},
        { kind: 'github', apiUrl: 'https://api.github.com', path: 'org/fleet' },
      ],
      [
        'https://ghe.example.com/org/fleet',
        { provider: 'github' },
        { kind: 'github', apiUrl: 'https://ghe.example.com/api/v3', path: 'org/fleet' },
      ],
      [
        'ssh://git@gitlab.com:2222/g/s/fleet.git',
        {},
        { kind: 'gitlab', apiUrl: 'https://gitlab.com/api/v4', path: 'g/s/fleet' },
      ],
      [
        'http://127.0.0.1:3000/git/me/fleet.git',
        { provider: 'gitea' },
        { kind: 'gitea', apiUrl: 'http://127.0.0.1:3000/git/api/v1', path: 'me/fleet' },
      ],
      ['https://git.example.com/me/fleet.git', {}, /set pullRequest\.provider/],
    ];
    for (const [url, stated, want] of cases) {
      const got = forgeRepo(url, stated);
      if (want instanceof RegExp) assert.match(String(got), want, url);
      else assert.deepEqual(got, want, url);
    }
  });
});
