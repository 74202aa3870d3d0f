/**
 * Resilience of the registry client: faults injected by the proxy in front of the real
 * registry (token auth). Sleeping is injected, so the waits asked for are recorded, not waited.
 */
import { createHook } from 'node:async_hooks';
import { getEventListeners } from 'node:events';
import { describe, test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { startRegistry, dockerConfigSecret, type TestRegistry } from '../helpers/registry.js';
import { startRegistryProxy, type RegistryProxy } from '../helpers/registry-proxy.js';
import { pushImage, seedTags } from '../helpers/push.js';
import {
  createRegistryClient,
  RegistryError,
  type RegistryClientOptions,
} from '../../src/scan/registry/client.js';
import { RegistryPool, type RegistryLimits } from '../../src/scan/registry/pool.js';
import { parseRepositoryRef } from '../../src/scan/registry/reference.js';
import type { RegistryClient, RepositoryRef } from '../../src/scan/registry/types.js';

const TAGS = 1000;

describe('registry client faults (token auth, paginating proxy, page size 100)', () => {
  let reg: TestRegistry;
  let proxy: RegistryProxy;
  let ref: RepositoryRef;
  let sleeps: number[] = [];

  function client(
    limits: Partial<RegistryLimits> = {},
    extra: Partial<RegistryClientOptions> = {},
  ): RegistryClient {
    return createRegistryClient({
      pool: new RegistryPool({ limits: { requestsPerSecond: 10_000, ...limits } }),
      dockerConfig: false,
      secret: dockerConfigSecret(proxy.host, reg.user!.username, reg.user!.password),
      sleep: async (ms) => {
        sleeps.push(ms);
      },
      random: () => 0.5,
      ...extra,
    });
  }

  async function rejection(p: Promise<unknown>): Promise<RegistryError> {
    try {
      await p;
    } catch (err) {
      assert.ok(err instanceof RegistryError, `expected a RegistryError, got ${String(err)}`);
      return err;
    }
    assert.fail('expected the listing to fail');
  }

  before(async () => {
    reg = await startRegistry({ auth: 'token' });
    const seed = await pushImage(reg.url, 'org/app', 'seed', {
      created: new Date('2024-01-01T00:00:00Z'),
      auth: reg.user!,
    });
    await seedTags(
      reg.storageDir,
      'org/app',
      Array.from({ length: TAGS - 1 }, (_, i) => `t${String(i).padStart(4, '0')}`),
      seed.digest,
    );
    proxy = await startRegistryProxy(reg.url, { pageSize: 100 });
    ref = parseRepositoryRef(`${proxy.host}/org/app`);
  });
  after(async () => {
    await proxy?.stop();
    await reg?.stop();
  });
  beforeEach(() => {
    sleeps = [];
    proxy.clearFaults();
    proxy.setTagList('org/app', null);
    proxy.resetCounts();
  });

  test('429 with Retry-After (seconds) then success: waits what the registry asked, list complete', async () => {
    proxy.addFault({ page: 3, action: { status: 429, retryAfter: '7' } });
    const list = await client().listTags(ref);
    assert.equal(list.tags.length, TAGS);
    assert.ok(sleeps.includes(7000), `sleeps: ${sleeps.join(',')}`);
    assert.equal(proxy.count('tags'), 11);
  });

  test('429 with Retry-After as an HTTP date', async () => {
    proxy.addFault({
      page: 1,
      action: { status: 429, retryAfter: new Date(Date.now() + 20_000).toUTCString() },
    });
    const list = await client().listTags(ref);
    assert.equal(list.tags.length, TAGS);
    assert.ok(
      sleeps.some((ms) => ms > 15_000 && ms <= 20_000),
      `sleeps: ${sleeps.join(',')}`,
    );
  });

  test('429 asking for longer than the timeout allows fails at once, saying so', async () => {
    proxy.addFault({ page: 1, action: { status: 429, retryAfter: '3600' } });
    const err = await rejection(client({}, { timeoutMs: 60_000 }).listTags(ref));
    assert.match(err.message, /429/);
    assert.match(err.message, /3600s/);
    assert.match(err.message, /timeout/);
    assert.equal(sleeps.length, 0);
  });

  test('503 then success: retried with back-off, list complete', async () => {
    proxy.addFault({ page: 5, times: 2, action: { status: 503 } });
    const list = await client().listTags(ref);
    assert.equal(list.tags.length, TAGS);
    assert.equal(sleeps.length, 2);
    assert.ok(sleeps[1]! > sleeps[0]!, 'back-off grows');
  });

  test('persistent 503: fails, saying what happened and how often it tried', async () => {
    proxy.addFault({ times: Infinity, action: { status: 503 } });
    const err = await rejection(client({ maxRetries: 3 }).listTags(ref));
    assert.match(err.message, /listing tags of 127\.0\.0\.1:\d+\/org\/app/);
    assert.match(err.message, /503/);
    assert.match(err.message, /4 attempts/);
    assert.equal(err.status, 503);
    assert.ok(err.requests >= 4);
    assert.ok(
      err.responses.some((r) => r.status === 503),
      'the failed responses are recorded',
    );
  });

  test('a page failing midway: the listing throws, nothing partial comes back', async () => {
    proxy.addFault({ page: 6, times: Infinity, action: { status: 500 } });
    const err = await rejection(client({ maxRetries: 1 }).listTags(ref));
    assert.match(err.message, /page 6|tags\/list/);
    assert.equal(
      proxy.requests.filter((q) => q.kind === 'tags' && q.status === 200).length,
      5,
      'five good pages were read and dropped',
    );
  });

  test('a truncated body is retried; persistently truncated fails', async () => {
    proxy.addFault({ page: 2, action: { truncate: true } });
    assert.equal((await client().listTags(ref)).tags.length, TAGS);
    proxy.addFault({ page: 2, times: Infinity, action: { truncate: true } });
    const err = await rejection(client({ maxRetries: 2 }).listTags(ref));
    assert.match(err.message, /failed after 3 attempts/);
  });

  test('malformed JSON fails the listing', async () => {
    proxy.addFault({ page: 4, action: { malformed: true } });
    const err = await rejection(client().listTags(ref));
    assert.match(err.message, /page 4 is not a tag list/);
  });

  test('names that are not tags are dropped and counted, with a few quoted examples', async () => {
    const long = 'x'.repeat(300);
    proxy.setTagList('org/app', [
      'seed',
      '../../x',
      'a b',
      long,
      '1.0.0\nimage: evil',
      '-dash',
      '1.0.1',
      'seed',
    ]);
    const list = await client().listTags(ref);
    assert.deepEqual([...list.tags].sort(), ['1.0.1', 'seed']);
    assert.equal(list.invalid?.count, 5);
    const ex = list.invalid!.examples;
    assert.equal(ex.length, 5);
    for (const e of ['"../../x"', '"a b"', '"-dash"', '"1.0.0\\nimage: evil"'])
      assert.ok(ex.includes(e), `${e} in ${JSON.stringify(ex)} (a newline escaped, not printed)`);
    assert.ok(
      ex.some((e) => e.length === 61 && e.endsWith('…')),
      'the 300-character name is cut short',
    );
  });

  test('a valid JSON page with entries that are not strings: those entries are dropped as invalid tags', async () => {
    proxy.addFault({
      page: 1,
      action: { status: 200, body: JSON.stringify({ name: 'org/app', tags: ['seed', 42, null, { a: 1 }] }) },
    });
    const list = await client().listTags(ref);
    assert.deepEqual(list.tags, ['seed']);
    assert.deepEqual(list.invalid, { count: 3, examples: ['42', 'null', '{"a":1}'] });
  });

  test('valid JSON that is not a tag list is called that, not "malformed JSON"', async () => {
    proxy.addFault({
      page: 2,
      action: { status: 200, body: JSON.stringify({ name: 'org/app', tags: 'seed' }) },
    });
    const err = await rejection(client().listTags(ref));
    assert.match(err.message, /page 2 is JSON but not a tag list \("tags": .*\); nothing was kept/);
    assert.doesNotMatch(err.message, /malformed/);
  });

  test('a page naming another repository fails the listing', async () => {
    proxy.addFault({
      page: 2,
      action: { status: 200, body: JSON.stringify({ name: 'org/other', tags: ['x'] }) },
    });
    const err = await rejection(client().listTags(ref));
    assert.match(err.message, /"org\/other", not of "org\/app"/);
  });

  test('a hanging registry: the operation timeout fires with a clear error', async () => {
    const c = client({}, { timeoutMs: 2000 });
    proxy.setTagList('org/app', ['seed']); // a one-page warm-up that fits the short timeout under load
    await c.listTags(ref); // ping and token are cached: the hang is the first request of the next listing
    proxy.addFault({ page: 1, action: { hang: true } });
    const err = await rejection(c.listTags(ref));
    assert.match(err.message, /timed out after 2s \(during page 1\)/);
  });

  test('a tag-list page that stalls on a fresh client is named as the page, not the /v2/ ping', async () => {
    const c = client({}, { timeoutMs: 2000 });
    proxy.setTagList('org/app', ['seed']);
    proxy.addFault({ page: 1, action: { hang: true } });
    const err = await rejection(c.listTags(ref));
    assert.match(err.message, /timed out after 2s \(during page 1\)/);
  });

  test('the caller’s signal cancels an operation in flight, named as cancelled', async () => {
    const c = client();
    proxy.setTagList('org/app', ['seed']);
    await c.listTags(ref);
    let hung!: () => void;
    const hanging = new Promise<void>((resolve) => (hung = resolve));
    proxy.addFault({ page: 1, action: { hang: true, onHang: () => hung() } });
    const caller = new AbortController();
    const pending = rejection(c.listTags(ref, { signal: caller.signal }));
    await hanging;
    caller.abort(new Error('the pass was stopped'));
    const err = await pending;
    assert.match(err.message, /cancelled \(the pass was stopped\)/);
  });

  test('an operation ends with its deadline’s timer cleared and the caller’s signal let go', async () => {
    // A deadline no other timer has, to tell the operations' timers from undici's and the test's.
    const deadline = 987_654;
    const live = new Set<number>();
    const hook = createHook({
      init(id, type, _trigger, resource) {
        if (type === 'Timeout' && (resource as { _idleTimeout?: number })._idleTimeout === deadline)
          live.add(id);
      },
      destroy(id) {
        live.delete(id);
      },
    }).enable();
    try {
      const c = client({}, { timeoutMs: deadline });
      const caller = new AbortController();
      proxy.setTagList('org/app', ['seed']);
      for (let i = 0; i < 5; i++) await c.listTags(ref, { signal: caller.signal });
      // A cleared timer's destroy is told after the current turn.
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(live.size, 0, 'timers still pending after the operations ended');
      assert.equal(getEventListeners(caller.signal, 'abort').length, 0);
    } finally {
      hook.disable();
    }
  });

  test('the page cap: a listing with more pages fails with a clear error', async () => {
    const err = await rejection(client({ maxPages: 3 }).listTags(ref));
    assert.match(err.message, /more than 3 pages/);
  });

  test('the tag cap', async () => {
    const err = await rejection(client({ maxTags: 250 }).listTags(ref));
    assert.match(err.message, /more than 250 tags/);
  });

  test('a registry that keeps failing is backed off across calls, with the time it ends', async () => {
    proxy.addFault({ kind: 'any', times: Infinity, action: { status: 502 } });
    const c = client({ maxRetries: 0, breakerThreshold: 2 });
    await rejection(c.listTags(ref));
    await rejection(c.listTags(ref));
    const before = proxy.count('any');
    const err = await rejection(c.listTags(ref));
    assert.match(err.message, /failed 2 times in a row .*leaving it alone until \d{4}-\d\d-\d\dT/);
    assert.equal(proxy.count('any'), before, 'no request while backed off');
  });

  test("Docker Hub's RateLimit-Remaining: 0 makes the next request wait for RateLimit-Reset", async () => {
    proxy.addFault({
      page: 1,
      action: {
        status: 200,
        headers: { 'ratelimit-remaining': '0;w=21600', 'ratelimit-reset': '30' },
        body: JSON.stringify({ name: 'org/app', tags: ['a'] }),
      },
    });
    const c = client();
    await c.listTags(ref);
    sleeps = [];
    const list = await c.listTags(ref);
    assert.equal(list.tags.length, TAGS);
    assert.ok(
      sleeps.some((ms) => ms > 25_000 && ms <= 30_000),
      `sleeps: ${sleeps.join(',')}`,
    );
  });

  test('a stale list from the registry is what the client reports (the guard decides)', async () => {
    proxy.setTagList('org/app', ['t0001', 'seed']);
    const list = await client().listTags(ref);
    assert.deepEqual(list.tags, ['seed', 't0001']);
  });

  test('a cached token is used until it expires, then fetched again', async () => {
    let now = Date.now();
    const pool = new RegistryPool({ limits: { requestsPerSecond: 10_000 }, now: () => now });
    const c = client({}, { pool });
    const before = reg.tokenServer!.requests;
    await c.listTags(ref);
    await c.listTags(ref);
    assert.equal(reg.tokenServer!.requests - before, 1, 'one token for two listings');
    now += 10 * 60_000; // past the token's 300s lifetime
    await c.listTags(ref);
    assert.equal(reg.tokenServer!.requests - before, 2, 'a new token after expiry');
  });

  test('a 401 with a cached token fetches a fresh token and retries once', async () => {
    const c = client();
    await c.listTags(ref);
    const before = reg.tokenServer!.requests;
    const challenge = `Bearer realm="${reg.tokenServer!.realm}",service="${reg.tokenServer!.service}",scope="repository:org/app:pull"`;
    proxy.addFault({ page: 1, action: { status: 401, headers: { 'www-authenticate': challenge } } });
    const list = await c.listTags(ref);
    assert.equal(list.tags.length, TAGS);
    assert.equal(reg.tokenServer!.requests - before, 1);
  });

  test('the token service failing is retried like the registry', async () => {
    reg.tokenServer!.failNext(1, 503);
    const list = await client().listTags(ref);
    assert.equal(list.tags.length, TAGS);
    assert.equal(sleeps.length, 1);
  });
});

describe('registry client: next-page links', () => {
  let reg: TestRegistry;
  after(async () => {
    await reg?.stop();
  });

  test('absolute same-origin links are followed; a cross-origin link is an error', async () => {
    reg = await startRegistry({ auth: 'none' });
    const seed = await pushImage(reg.url, 'org/app', 'seed');
    await seedTags(
      reg.storageDir,
      'org/app',
      Array.from({ length: 30 }, (_, i) => `t${i}`),
      seed.digest,
    );
    const abs = await startRegistryProxy(reg.url, { pageSize: 10, linkStyle: 'absolute' });
    const cross = await startRegistryProxy(reg.url, { pageSize: 10, linkStyle: 'cross-origin' });
    try {
      const c = createRegistryClient({ pool: new RegistryPool(), dockerConfig: false });
      const list = await c.listTags(parseRepositoryRef(`${abs.host}/org/app`));
      assert.equal(list.tags.length, 31);
      assert.equal(list.pages, 4);
      await assert.rejects(
        c.listTags(parseRepositoryRef(`${cross.host}/org/app`)),
        /another origin \(http:\/\/elsewhere\.example\.invalid\)/,
      );
    } finally {
      await abs.stop();
      await cross.stop();
    }
  });
});
