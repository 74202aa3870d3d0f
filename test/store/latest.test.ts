/**
 * The latest scans kept between reads (src/store/latest.ts), over a counted read: each repository
 * is read once and then kept, until the store says a scan of it began or finished, or the stamp
 * it reads with changes (another connection's commit, a failed commit), or everything is cleared.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LatestScansCache } from '../../src/store/latest.js';
import type { LatestScans } from '../../src/store/index.js';
import type { ScanRecord } from '../../src/records/index.js';

function counted() {
  const asked: string[][] = [];
  let version = 0;
  const record = (repository: string): ScanRecord => ({
    id: version,
    repository,
    image: 'example.com/app',
    startedAt: new Date(0),
    endedAt: new Date(0),
    outcome: 'ok',
    error: null,
    tagCount: 1,
    checksum: 'c',
    added: [],
    removed: [],
    anomalies: [],
    requests: 1,
  });
  const cache = new LatestScansCache((repositories) => {
    asked.push([...repositories]);
    return new Map<string, LatestScans>(
      repositories.map((r) => {
        const scan = r === 'ns/none' ? null : record(r);
        return [r, { finished: scan, good: scan }];
      }),
    );
  });
  return { cache, asked, change: () => version++ };
}

test('each repository is read once, then kept; only what is missing is read', () => {
  const { cache, asked } = counted();
  const first = cache.of(['ns/a', 'ns/b', 'ns/none'], 's');
  const again = cache.of(['ns/a', 'ns/b', 'ns/none'], 's');
  assert.deepEqual(asked, [['ns/a', 'ns/b', 'ns/none']]);
  assert.equal(again.get('ns/a')!.finished, first.get('ns/a')!.finished);
  assert.deepEqual(again.get('ns/none'), { finished: null, good: null });
  cache.of(['ns/b', 'ns/c'], 's');
  assert.deepEqual(asked.at(-1), ['ns/c']);
  assert.equal(asked.length, 2);
});

test('a forgotten repository, a new stamp and a clear are read again', () => {
  const { cache, asked, change } = counted();
  cache.of(['ns/a', 'ns/b'], 's');
  change();
  cache.forget('ns/a');
  assert.equal(cache.of(['ns/a', 'ns/b'], 's').get('ns/a')!.finished!.id, 1);
  assert.deepEqual(asked.at(-1), ['ns/a']);
  change();
  assert.equal(cache.of(['ns/a', 'ns/b'], 't').get('ns/b')!.finished!.id, 2);
  assert.deepEqual(asked.at(-1), ['ns/a', 'ns/b']);
  cache.clear();
  cache.of(['ns/b'], 't');
  assert.deepEqual(asked.at(-1), ['ns/b']);
  assert.equal(asked.length, 4);
});

test('callers are given the kept pairs, which they cannot change, nor their records', () => {
  const { cache } = counted();
  const pair = cache.of(['ns/a'], 's').get('ns/a')!;
  assert.throws(() => {
    (pair as { good: unknown }).good = null;
  }, TypeError);
  const kept = cache.of(['ns/a'], 's').get('ns/a')!;
  assert.equal(kept, pair, 'the same pair, not a copy a read');
  assert.notEqual(kept.good, null);
  assert.throws(() => {
    (kept.finished as { outcome: string }).outcome = 'failed';
  }, TypeError);
});
