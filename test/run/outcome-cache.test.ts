/**
 * What a daemon keeps between passes (src/run/outcome-cache.ts), by what it holds, not by time
 * (issue 27): one copy of each repository's latest scans however many passes read them, and
 * kept outcomes without the pass's facts or what the store was given.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Config, ImagePolicy, ImageRepository } from '../../src/config/index.js';
import { OutcomeCache, type PolicyOutcome } from '../../src/run/index.js';
import type { ScanRecord } from '../../src/records/index.js';
import type { LatestScans } from '../../src/store/index.js';

const scan = (id: number, repository: string): ScanRecord => ({
  id,
  repository,
  image: `ghcr.io/org/${repository}`,
  startedAt: new Date(id * 1000),
  endedAt: new Date(id * 1000 + 10),
  outcome: 'ok',
  error: null,
  tagCount: 1,
  checksum: 'c',
  added: ['1.0.0'],
  removed: [],
  anomalies: [],
  requests: 1,
});

/** A store's answer: new objects each time, as every read makes them. */
const read = (ids: Record<string, number>): Map<string, LatestScans> =>
  new Map(Object.entries(ids).map(([r, id]) => [r, { finished: scan(id, r), good: scan(id, r) }]));

/** A read through the cache, as a pass takes it: the pairs replaced in place, by position. */
const shared = (cache: OutcomeCache, latest: Map<string, LatestScans>): Map<string, LatestScans> => {
  const names = [...latest.keys()];
  const pairs = [...latest.values()];
  cache.shareScans(names, pairs);
  return new Map(names.map((n, i) => [n, pairs[i]!]));
};

test('passes that read the same latest scans hold one copy of them; a newer scan replaces it', () => {
  const cache = new OutcomeCache();
  const names = Array.from({ length: 100 }, (_, i) => `apps/r${i}`);
  const ids = Object.fromEntries(names.map((n, i) => [n, i + 1]));
  const first = shared(cache, read(ids));
  // Ten passes, each reading twice.
  const later = Array.from({ length: 20 }, () => shared(cache, read(ids)));
  for (const n of names)
    assert.equal(new Set([first, ...later].map((m) => m.get(n))).size, 1, `${n}: one copy for 21 reads`);
  const rescanned = shared(cache, read({ ...ids, 'apps/r0': 500 }));
  assert.notEqual(rescanned.get('apps/r0'), first.get('apps/r0'), 'a newer scan is not the old copy');
  assert.equal(rescanned.get('apps/r0')!.finished!.id, 500);
  assert.equal(rescanned.get('apps/r1'), first.get('apps/r1'));
  assert.equal(shared(cache, read({ 'apps/r0': 500 })).get('apps/r0'), rescanned.get('apps/r0'));
});

test('a kept outcome gives the store nothing, and later passes take that one object', () => {
  const cache = new OutcomeCache();
  const repository = { metadata: { namespace: 'apps', name: 'web' }, spec: {} } as unknown as ImageRepository;
  const policy = {
    metadata: { namespace: 'apps', name: 'web' },
    spec: { imageRepositoryRef: { namespace: 'apps', name: 'web' } },
  } as unknown as ImagePolicy;
  const config = {
    imagePolicies: new Map([['apps/web', policy]]),
    imageRepositories: new Map([['apps/web', repository]]),
  } as unknown as Config;
  const latest: LatestScans = { finished: scan(1, 'apps/web'), good: scan(1, 'apps/web') };
  const outcome = {
    name: 'apps/web',
    policy,
    events: [{ kind: 'stale-scan' }],
    record: { state: { specHash: 'h' }, events: [{ kind: 'stale-scan' }], selection: { tag: '1.0.0' } },
    basis: { scans: '1/ok/1', settled: true },
  } as unknown as PolicyOutcome;
  cache.keep([outcome], config);
  assert.equal(cache.size, 1);
  const kept = cache.lookup(policy, repository, latest);
  assert.ok(kept, 'kept under the same scans');
  // Its state is the one stored, its events and selection were recorded by the pass that made it.
  assert.deepEqual(kept.events, []);
  assert.deepEqual(kept.record, { state: null, events: [], selection: null });
  assert.throws(() => (kept.record!.events as unknown[]).push({}), TypeError, 'frozen: no pass adds to it');
  assert.throws(() => (kept.events as unknown[]).push({}), TypeError);
  assert.deepEqual(outcome.events, [{ kind: 'stale-scan' }], "the pass's own outcome is untouched");
  assert.deepEqual(outcome.record?.state, { specHash: 'h' });
  assert.equal(cache.lookup(policy, repository, latest), kept, 'the same object for every later pass');
  // A reload: the same specs under new objects. The outcome names the new policy from then on.
  const reloaded = { ...policy, spec: { ...policy.spec } } as ImagePolicy;
  const itsRepository = { ...repository } as ImageRepository;
  const again = cache.lookup(reloaded, itsRepository, latest);
  assert.ok(again);
  assert.equal(again.policy, reloaded);
  assert.equal(cache.lookup(reloaded, itsRepository, latest), again);
});

test("a daemon's passes evaluate their policies one at a time, in the order they asked", async () => {
  const cache = new OutcomeCache();
  let running = 0;
  let most = 0;
  const order: number[] = [];
  const release: (() => void)[] = [];
  const evaluations = [1, 2, 3].map((n) =>
    cache.oneAtATime(async () => {
      running++;
      most = Math.max(most, running);
      order.push(n);
      await new Promise<void>((resolve) => release.push(resolve));
      running--;
      return n;
    }),
  );
  for (let i = 0; i < 3; i++) {
    await new Promise((r) => setImmediate(r));
    assert.equal(running, 1, 'one evaluation at a time');
    release.shift()!();
  }
  assert.deepEqual(await Promise.all(evaluations), [1, 2, 3]);
  assert.deepEqual(order, [1, 2, 3]);
  assert.equal(most, 1);
});
