/**
 * The store contract: what every backend (SQLite, PostgreSQL) must do, run against each by its
 * own test file (sqlite.test.ts, postgres.test.ts). `open` gives a fresh, empty store each time.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Decision, StoredEvent } from '../../src/records/index.js';
import { tagListChecksum, type Store, type StoreOptions } from '../../src/store/index.js';
import { diffTags } from '../../src/scan/index.js';
import { checkCarriedSequence } from './carried.js';
import type { RecordedResponse } from '../../src/scan/registry/types.js';

export const T0 = new Date('2026-01-01T00:00:00Z');
export const at = (minutes: number) => new Date(T0.getTime() + minutes * 60_000);

export async function scan(
  store: Store,
  repo: string,
  tags: string[],
  minute: number,
  image = 'example.com/app',
) {
  const id = await store.beginScan(repo, image, at(minute));
  return store.finishScan(id, { outcome: 'ok', tags, requests: 2, endedAt: at(minute) }, diffTags);
}

export function response(i: number, body = `{"name":"app","tags":["t${i}"]}`): RecordedResponse {
  return {
    method: 'GET',
    url: `https://user:pw@r.example/v2/app/tags/list?n=100&last=t${i}`,
    status: 200,
    headers: {
      'Content-Type': 'application/json',
      Authorization: 'Bearer sekret-token-value',
      'Set-Cookie': 'session=abc',
    },
    body,
    at: at(i).toISOString(),
    durationMs: 3,
  };
}

const decision: Decision = {
  automation: 'ns/auto',
  file: 'a.yaml',
  line: 3,
  setter: 'ns:p',
  policy: 'ns/p',
  current: '1.0',
  candidate: '1.1',
  reason: 'upgrade',
  detail: '',
  action: 'write',
};

export type OpenStore = (options?: StoreOptions) => Promise<Store>;

export function storeContract(name: string, open: OpenStore): void {
  /** Runs `fn` on a fresh store and closes it. */
  const withStore = (fn: (s: Store) => Promise<void>, options?: StoreOptions) => async (): Promise<void> => {
    const s = await open(options);
    try {
      await fn(s);
    } finally {
      await s.close();
    }
  };

  describe(`store contract: ${name}`, () => {
    describe('scans', () => {
      test(
        'first good scan: everything added, all tags initial, checksum of sorted tags',
        withStore(async (s) => {
          const r = await scan(s, 'ns/app', ['b', 'a', 'c', 'a'], 0);
          assert.equal(r.outcome, 'ok');
          assert.equal(r.tagCount, 3);
          assert.deepEqual(r.added, ['a', 'b', 'c']);
          assert.deepEqual(r.removed, []);
          assert.deepEqual(r.anomalies, []);
          assert.equal(r.checksum, tagListChecksum(['c', 'b', 'a']));
          assert.equal((await s.tagInfo('ns/app', 'a'))?.initial, true);
          assert.equal(await s.tagInfo('ns/app', 'zzz'), null);
        }),
      );

      test(
        'later scans: added and removed, tags-missing, first/last seen, new tags not initial',
        withStore(async (s) => {
          await scan(s, 'ns/app', ['1.0.0', '1.1.0', '1.2.0'], 0);
          const r = await scan(s, 'ns/app', ['1.0.0', '1.2.0', '1.3.0'], 10);
          assert.deepEqual(r.added, ['1.3.0']);
          assert.deepEqual(r.removed, ['1.1.0']);
          assert.deepEqual(r.anomalies, [{ kind: 'tags-missing', count: 1, tags: ['1.1.0'] }]);
          assert.deepEqual(await s.currentTags('ns/app'), ['1.0.0', '1.2.0', '1.3.0']);
          const old = (await s.tagInfo('ns/app', '1.0.0'))!;
          assert.deepEqual([old.firstSeen, old.lastSeen, old.initial], [at(0), at(10), true]);
          const fresh = (await s.tagInfo('ns/app', '1.3.0'))!;
          assert.deepEqual([fresh.firstSeen, fresh.lastSeen, fresh.initial], [at(10), at(10), false]);
          // A vanished tag is not in the current image's scan; its info remains as last observed.
          assert.equal((await s.tagInfo('ns/app', '1.1.0'))!.lastSeen.getTime(), at(0).getTime());
          // Listed again: current again, first seen when it first appeared, last seen now.
          await scan(s, 'ns/app', ['1.0.0', '1.1.0', '1.2.0', '1.3.0'], 20);
          const back = (await s.tagInfo('ns/app', '1.1.0'))!;
          assert.deepEqual([back.firstSeen, back.lastSeen, back.initial], [at(0), at(20), true]);
        }),
      );

      test(
        'empty list and count-drop anomalies',
        withStore(async (s) => {
          const many = Array.from({ length: 50 }, (_, i) => `t${i}`);
          await scan(s, 'ns/app', many, 0);
          const small = await scan(s, 'ns/app', many.slice(0, 46), 1); // drop of 4: below the absolute threshold
          assert.deepEqual(
            small.anomalies.map((a) => a.kind),
            ['tags-missing'],
          );
          const big = await scan(s, 'ns/app', many.slice(0, 40), 2); // 46 → 40: 6 tags, 13%
          assert.deepEqual(
            big.anomalies.map((a) => a.kind),
            ['tags-missing', 'count-drop'],
          );
          assert.deepEqual(big.anomalies[1], { kind: 'count-drop', from: 46, to: 40 });
          const empty = await scan(s, 'ns/app', [], 3);
          assert.deepEqual(
            empty.anomalies.map((a) => a.kind),
            ['empty', 'tags-missing', 'count-drop'],
          );
          assert.deepEqual(await s.currentTags('ns/app'), []);
        }),
      );

      test(
        'a failed scan stores only its row; the previous good data stays current',
        withStore(async (s) => {
          await scan(s, 'ns/app', ['1', '2'], 0);
          const id = await s.beginScan('ns/app', 'example.com/app', at(5));
          const r = await s.finishScan(
            id,
            { outcome: 'failed', error: 'registry said 503', requests: 4, endedAt: at(6) },
            diffTags,
          );
          assert.equal(r.outcome, 'failed');
          assert.equal(r.tagCount, null);
          assert.deepEqual(await s.currentTags('ns/app'), ['1', '2']);
          assert.equal((await s.lastScan('ns/app'))!.id, id);
          assert.equal((await s.lastScan('ns/app'))!.error, 'registry said 503');
          assert.equal((await s.lastGoodScan('ns/app'))!.tagCount, 2);
          assert.equal((await s.tagInfo('ns/app', '1'))!.lastSeen.getTime(), at(0).getTime());
          // The next good scan compares with the last good one, not the failure.
          const next = await scan(s, 'ns/app', ['1', '2', '3'], 10);
          assert.deepEqual(next.added, ['3']);
          assert.deepEqual(next.removed, []);
          await assert.rejects(
            s.finishScan(id, { outcome: 'ok', tags: [], requests: 0, endedAt: at(11) }, diffTags),
            /already finished/,
          );
          await assert.rejects(
            s.finishScan(id + 1000, { outcome: 'ok', tags: [], requests: 0, endedAt: at(11) }, diffTags),
            /no scan with id/,
          );
        }),
      );

      test(
        'history is newest first, per repository, and a running scan shows as running',
        withStore(async (s) => {
          await scan(s, 'ns/a', ['1'], 0);
          await scan(s, 'ns/b', ['x'], 1);
          await scan(s, 'ns/a', ['1', '2'], 2);
          await s.beginScan('ns/a', 'example.com/app', at(3));
          const h = await s.scanHistory('ns/a', 10);
          assert.deepEqual(
            h.map((x) => x.outcome),
            ['running', 'ok', 'ok'],
          );
          assert.deepEqual(
            h.map((x) => x.tagCount),
            [null, 2, 1],
          );
          assert.equal((await s.scanHistory('ns/a', 1)).length, 1);
          assert.equal((await s.lastFinishedScan('ns/a'))!.tagCount, 2);
          assert.equal((await s.lastScan('ns/a'))!.outcome, 'running');
          assert.deepEqual(await s.knownRepositories(), ['ns/a', 'ns/b']);
        }),
      );

      test(
        'a changed image starts afresh: its tags are initial and nothing is missing',
        withStore(async (s) => {
          await scan(s, 'ns/app', ['1', '2'], 0, 'old.example/app');
          const r = await scan(s, 'ns/app', ['9'], 1, 'new.example/app');
          assert.deepEqual(r.removed, []);
          assert.deepEqual(r.anomalies, []);
          assert.deepEqual(await s.currentTags('ns/app'), ['9']);
          assert.equal((await s.tagInfo('ns/app', '9'))!.initial, true);
          assert.equal(await s.tagInfo('ns/app', '1'), null);
        }),
      );

      test(
        'an image changed back compares with its own last good scan, across the other image’s',
        withStore(async (s) => {
          await scan(s, 'ns/app', ['1', '2'], 0, 'old.example/app');
          await scan(s, 'ns/app', ['9'], 1, 'new.example/app');
          const back = await scan(s, 'ns/app', ['1', '2', '3'], 2, 'old.example/app');
          assert.deepEqual([back.added, back.removed, back.anomalies], [['3'], [], []]);
          assert.deepEqual(await s.currentTags('ns/app'), ['1', '2', '3']);
          assert.deepEqual((await s.tagInfo('ns/app', '1'))!.firstSeen, at(0));
          assert.deepEqual(
            (await s.scanHistory('ns/app')).map((x) => x.image),
            ['old.example/app', 'new.example/app', 'old.example/app'],
          );
          assert.deepEqual(await s.knownRepositories(), ['ns/app']);
        }),
      );

      test(
        'overlapping scans: the later one finishing first is current, the earlier is compared with the good scan before both',
        withStore(async (s) => {
          const first = await scan(s, 'ns/app', ['1', '2'], 0);
          await scan(s, 'ns/other', ['x'], 1);
          const failed = await s.beginScan('ns/app', 'example.com/app', at(2));
          await s.finishScan(
            failed,
            { outcome: 'failed', error: 'x', requests: 1, endedAt: at(2) },
            diffTags,
          );
          const early = await s.beginScan('ns/app', 'example.com/app', at(3));
          const late = await s.beginScan('ns/app', 'example.com/app', at(4));
          const ok = (tags: string[], minute: number) =>
            ({ outcome: 'ok', tags, requests: 1, endedAt: at(minute) }) as const;
          const l = await s.finishScan(late, ok(['1', '2', '3'], 5), diffTags);
          assert.deepEqual([l.added, l.removed], [['3'], []]);
          // Back past the failed scan to the good one before both, which listed the same: nothing
          // added or removed (against the later scan, '3' would be removed; against none, all added).
          const e = await s.finishScan(early, ok(['2', '1'], 6), diffTags);
          assert.deepEqual([e.added, e.removed], [[], []]);
          // Its rows were not written: the later scan's tags stay current.
          assert.deepEqual(await s.currentTags('ns/app'), ['1', '2', '3']);
          assert.deepEqual((await s.tagInfo('ns/app', '3'))!.lastSeen, at(4));
          const latest = (await s.latestScans(['ns/app'])).get('ns/app')!;
          assert.deepEqual([latest.finished!.id, latest.good!.id], [late, late]);
          assert.deepEqual(
            (await s.scanHistory('ns/app')).map((x) => x.id),
            [late, early, failed, first.id],
          );
          // The next scan compares with the later scan, the image's newest good one.
          const next = await scan(s, 'ns/app', ['1', '2', '3', '5'], 7);
          assert.deepEqual([next.added, next.removed], [['5'], []]);
        }),
      );

      test(
        'a long history reads back in order, a page at a time, per repository',
        withStore(async (s) => {
          const ids: number[] = [];
          for (let i = 0; i < 60; i++) {
            ids.push((await scan(s, 'ns/a', [`${i % 3}`], i)).id);
            if (i % 2 === 0) await scan(s, 'ns/b', ['x'], i);
          }
          assert.deepEqual(
            (await s.scanHistory('ns/a', 50)).map((x) => x.id),
            ids.slice(-50).reverse(),
          );
          assert.equal((await s.scanHistory('ns/b', 100)).length, 30);
          assert.deepEqual(await s.scanHistory('ns/none'), []);
          assert.equal((await s.lastScan('ns/a'))!.id, ids.at(-1));
        }),
      );

      test(
        'tag digests',
        withStore(async (s) => {
          await scan(s, 'ns/app', ['1'], 0);
          assert.equal((await s.tagInfo('ns/app', '1'))!.digest, null);
          await s.write({
            tagDigests: [{ repository: 'ns/app', tag: '1', digest: 'sha256:aaa', at: at(1) }],
          });
          await s.write({
            tagDigests: [{ repository: 'ns/app', tag: '1', digest: 'sha256:bbb', at: at(2) }],
          });
          assert.equal((await s.tagInfo('ns/app', '1'))!.digest, 'sha256:bbb');
          assert.equal((await s.currentTagInfos('ns/app'))[0]!.digest, 'sha256:bbb');
        }),
      );

      test(
        'batch reads: latest scans and current tags of many repositories, unknown ones empty',
        withStore(async (s) => {
          await scan(s, 'ns/a', ['2', '1'], 0);
          const failed = await s.beginScan('ns/a', 'example.com/app', at(1));
          await s.finishScan(
            failed,
            { outcome: 'failed', error: 'x', requests: 1, endedAt: at(1) },
            diffTags,
          );
          await s.beginScan('ns/a', 'example.com/app', at(2)); // running: neither finished nor good
          await scan(s, 'ns/b', ['x'], 3);
          const latest = await s.latestScans(['ns/a', 'ns/b', 'ns/none']);
          assert.equal(latest.size, 3, 'every name asked is a key');
          assert.equal(latest.get('ns/a')!.finished!.id, failed);
          assert.equal(latest.get('ns/a')!.finished!.outcome, 'failed');
          assert.deepEqual(latest.get('ns/a')!.good, await s.lastGoodScan('ns/a'));
          assert.deepEqual(latest.get('ns/b')!.finished, await s.lastFinishedScan('ns/b'));
          assert.deepEqual(latest.get('ns/none'), { finished: null, good: null });
          // Asked out of order, and a name twice: the same answers.
          const unordered = await s.latestScans(['ns/none', 'ns/b', 'ns/a', 'ns/b']);
          for (const n of ['ns/a', 'ns/b', 'ns/none']) assert.deepEqual(unordered.get(n), latest.get(n), n);
          assert.equal(unordered.get('ns/other'), undefined);
          const tags = await s.currentTagsOf(['ns/a', 'ns/b', 'ns/none']);
          assert.deepEqual(Object.fromEntries(tags), { 'ns/a': ['1', '2'], 'ns/b': ['x'], 'ns/none': [] });
          assert.deepEqual((await s.latestScans([])).size, 0);
        }),
      );

      test(
        'latest scans read again and again follow every scan begun, finished and interrupted',
        withStore(async (s) => {
          const latest = async (r: string) => (await s.latestScans([r, 'ns/other'])).get(r)!;
          const first = await scan(s, 'ns/a', ['1'], 0);
          assert.deepEqual(await latest('ns/a'), { finished: first, good: first });
          assert.deepEqual(await latest('ns/a'), { finished: first, good: first });
          const running = await s.beginScan('ns/a', 'example.com/app', at(1));
          assert.deepEqual(await latest('ns/a'), { finished: first, good: first });
          await s.finishScan(
            running,
            { outcome: 'failed', error: 'x', requests: 1, endedAt: at(1) },
            diffTags,
          );
          const failed = await latest('ns/a');
          assert.equal(failed.finished!.id, running);
          assert.equal(failed.finished!.outcome, 'failed');
          assert.equal(failed.good!.id, first.id);
          const good = await scan(s, 'ns/a', ['1', '2'], 2);
          assert.deepEqual(await latest('ns/a'), { finished: good, good });
          assert.deepEqual(good.added, ['2']);
          // A scan left running is marked interrupted by the next one's beginning, hours later.
          const stuck = await s.beginScan('ns/a', 'example.com/app', at(3));
          assert.equal((await latest('ns/a')).finished!.id, good.id);
          await s.beginScan('ns/a', 'example.com/app', at(3 + 7 * 60));
          const interrupted = (await latest('ns/a')).finished!;
          assert.equal(interrupted.id, stuck);
          assert.match(interrupted.error!, /interrupted/);
          // What a caller is given cannot be changed for the next (a kept pair is frozen).
          const pair = await latest('ns/a');
          try {
            (pair as { finished: unknown }).finished = null;
          } catch {
            // frozen: the SQLite store's kept pair
          }
          assert.equal((await latest('ns/a')).finished!.id, stuck);
          assert.deepEqual(await latest('ns/other'), { finished: null, good: null });
        }),
      );

      test(
        'a scan left running by a crashed process is marked interrupted by the next scan, hours later',
        withStore(async (s) => {
          const scanOf = async (id: number) => (await s.scanHistory('ns/app')).find((x) => x.id === id);
          const stuck = await s.beginScan('ns/app', 'example.com/app', at(0));
          await s.beginScan('ns/app', 'example.com/app', at(30)); // another process may still be on it
          assert.equal((await scanOf(stuck))!.outcome, 'running');
          await s.beginScan('ns/app', 'example.com/app', at(7 * 60));
          assert.equal((await scanOf(stuck))!.outcome, 'failed');
          assert.match((await scanOf(stuck))!.error!, /interrupted/);
        }),
      );
    });

    describe('unchanged rescans (a scan that lists what the previous good one listed)', () => {
      const info = async (s: Store, tag: string) => {
        const i = await s.tagInfo('ns/app', tag);
        return i && { firstSeen: i.firstSeen.getTime(), lastSeen: i.lastSeen.getTime(), initial: i.initial };
      };

      test(
        'last seen moves to each rescan, first seen stays, the scan records nothing added or removed',
        withStore(async (s) => {
          await scan(s, 'ns/app', ['1', '2'], 0);
          await scan(s, 'ns/app', ['1', '2', '3'], 10);
          for (const minute of [20, 30]) {
            const r = await scan(s, 'ns/app', ['3', '2', '1'], minute);
            assert.deepEqual([r.tagCount, r.added, r.removed, r.anomalies], [3, [], [], []]);
            assert.equal(r.checksum, tagListChecksum(['1', '2', '3']));
            assert.equal(r.startedAt.getTime(), at(minute).getTime());
          }
          assert.deepEqual(await s.currentTags('ns/app'), ['1', '2', '3']);
          assert.deepEqual(await info(s, '1'), {
            firstSeen: at(0).getTime(),
            lastSeen: at(30).getTime(),
            initial: true,
          });
          assert.deepEqual(await info(s, '3'), {
            firstSeen: at(10).getTime(),
            lastSeen: at(30).getTime(),
            initial: false,
          });
          const infos = await s.currentTagInfos('ns/app');
          assert.deepEqual(
            infos.map((i) => [i.tag, i.firstSeen.getTime(), i.lastSeen.getTime()]),
            [
              ['1', at(0).getTime(), at(30).getTime()],
              ['2', at(0).getTime(), at(30).getTime()],
              ['3', at(10).getTime(), at(30).getTime()],
            ],
          );
          // History shows every scan as it was, newest first.
          const h = await s.scanHistory('ns/app');
          assert.deepEqual(
            h.map((x) => [x.startedAt.getTime(), x.tagCount, x.added, x.removed]),
            [
              [at(30).getTime(), 3, [], []],
              [at(20).getTime(), 3, [], []],
              [at(10).getTime(), 3, ['3'], []],
              [at(0).getTime(), 2, ['1', '2'], []],
            ],
          );
        }),
      );

      test(
        'a tag removed after unchanged rescans was last seen at the last scan that listed it; listed again, its first seen stays',
        withStore(async (s) => {
          await scan(s, 'ns/app', ['1', '2', '3'], 0);
          await scan(s, 'ns/app', ['1', '2', '3'], 10);
          await scan(s, 'ns/app', ['1', '2', '3'], 20);
          const r = await scan(s, 'ns/app', ['1', '3', '4'], 30);
          assert.deepEqual([r.added, r.removed], [['4'], ['2']]);
          assert.deepEqual(r.anomalies, [{ kind: 'tags-missing', count: 1, tags: ['2'] }]);
          assert.deepEqual(await s.currentTags('ns/app'), ['1', '3', '4']);
          assert.deepEqual(await info(s, '2'), {
            firstSeen: at(0).getTime(),
            lastSeen: at(20).getTime(),
            initial: true,
          });
          assert.deepEqual(await info(s, '1'), {
            firstSeen: at(0).getTime(),
            lastSeen: at(30).getTime(),
            initial: true,
          });
          // Unchanged again: the tag that left keeps its last seen.
          await scan(s, 'ns/app', ['1', '3', '4'], 40);
          assert.equal((await info(s, '2'))!.lastSeen, at(20).getTime());
          assert.equal((await info(s, '4'))!.lastSeen, at(40).getTime());
          // Back: current again, first seen as first observed, last seen now.
          const back = await scan(s, 'ns/app', ['1', '2', '3', '4'], 50);
          assert.deepEqual([back.added, back.removed], [['2'], []]);
          assert.deepEqual(await info(s, '2'), {
            firstSeen: at(0).getTime(),
            lastSeen: at(50).getTime(),
            initial: true,
          });
          await scan(s, 'ns/app', ['1', '2', '3', '4'], 60);
          assert.deepEqual(await s.currentTags('ns/app'), ['1', '2', '3', '4']);
          for (const tag of ['1', '2', '3', '4'])
            assert.equal((await info(s, tag))!.lastSeen, at(60).getTime());
        }),
      );

      test(
        'a failed scan between: last seen stays at the last good scan, and the next good one is compared with it',
        withStore(async (s) => {
          await scan(s, 'ns/app', ['1', '2'], 0);
          await scan(s, 'ns/app', ['1', '2'], 10);
          const failed = await s.beginScan('ns/app', 'example.com/app', at(20));
          await s.finishScan(
            failed,
            { outcome: 'failed', error: 'registry said 503', requests: 1, endedAt: at(20) },
            diffTags,
          );
          assert.equal((await info(s, '1'))!.lastSeen, at(10).getTime());
          assert.deepEqual(await s.currentTags('ns/app'), ['1', '2']);
          const r = await scan(s, 'ns/app', ['1', '2'], 30);
          assert.deepEqual([r.added, r.removed], [[], []]);
          assert.equal((await info(s, '2'))!.lastSeen, at(30).getTime());
          const gone = await scan(s, 'ns/app', ['1'], 40);
          assert.deepEqual(gone.removed, ['2']);
          assert.equal((await info(s, '2'))!.lastSeen, at(30).getTime());
          assert.deepEqual(
            (await s.scanHistory('ns/app')).map((x) => x.outcome),
            ['ok', 'ok', 'failed', 'ok', 'ok'],
          );
        }),
      );

      test(
        'an empty list repeated is still an anomaly each time',
        withStore(async (s) => {
          await scan(s, 'ns/app', ['1'], 0);
          await scan(s, 'ns/app', [], 10);
          const again = await scan(s, 'ns/app', [], 20);
          assert.deepEqual(again.anomalies, [{ kind: 'empty' }]);
          assert.deepEqual(await s.currentTags('ns/app'), []);
          assert.deepEqual(await s.currentTagInfos('ns/app'), []);
          assert.equal((await info(s, '1'))!.lastSeen, at(0).getTime());
        }),
      );

      test(
        'an image changed and changed back: compared with its own last list, its tags as first observed',
        withStore(async (s) => {
          await scan(s, 'ns/app', ['1', '2'], 0, 'old.example/app');
          await scan(s, 'ns/app', ['9'], 10, 'new.example/app');
          assert.deepEqual(await s.currentTags('ns/app'), ['9']);
          const r = await scan(s, 'ns/app', ['1', '2'], 20, 'old.example/app');
          assert.deepEqual([r.added, r.removed], [[], []]);
          assert.deepEqual(await s.currentTags('ns/app'), ['1', '2']);
          assert.deepEqual(await info(s, '1'), {
            firstSeen: at(0).getTime(),
            lastSeen: at(20).getTime(),
            initial: true,
          });
          assert.equal(await s.tagInfo('ns/app', '9'), null);
        }),
      );

      test(
        'current tags of many repositories follow every change, asked again and again',
        withStore(async (s) => {
          const current = async () => Object.fromEntries(await s.currentTagsOf(['ns/a', 'ns/b', 'ns/c']));
          await scan(s, 'ns/a', ['1'], 0);
          await scan(s, 'ns/b', ['x'], 0);
          assert.deepEqual(await current(), { 'ns/a': ['1'], 'ns/b': ['x'], 'ns/c': [] });
          const given = (await s.currentTagsOf(['ns/a'])).get('ns/a')!;
          given.push('mutated by a caller');
          await scan(s, 'ns/a', ['1'], 10);
          assert.deepEqual(await current(), { 'ns/a': ['1'], 'ns/b': ['x'], 'ns/c': [] });
          await scan(s, 'ns/a', ['1', '2'], 20);
          await scan(s, 'ns/c', ['z'], 20);
          assert.deepEqual(await current(), { 'ns/a': ['1', '2'], 'ns/b': ['x'], 'ns/c': ['z'] });
          await scan(s, 'ns/a', ['2'], 30);
          await scan(s, 'ns/b', ['x'], 30, 'other.example/b');
          assert.deepEqual(await current(), { 'ns/a': ['2'], 'ns/b': ['x'], 'ns/c': ['z'] });
          await scan(s, 'ns/a', ['1', '2'], 40);
          assert.deepEqual(await current(), { 'ns/a': ['1', '2'], 'ns/b': ['x'], 'ns/c': ['z'] });
          assert.deepEqual(await s.currentTags('ns/a'), ['1', '2']);
        }),
      );

      test(
        'two scans at once: one that started earlier and finished later leaves the later one current',
        withStore(async (s) => {
          const finish = (id: number, tags: string[], minute: number) =>
            s.finishScan(id, { outcome: 'ok', tags, requests: 1, endedAt: at(minute) }, diffTags);
          await scan(s, 'ns/app', ['1', '2'], 0);
          // The later scan repeats the list; the earlier one saw a tag more, and finishes last.
          let early = await s.beginScan('ns/app', 'example.com/app', at(10));
          let late = await s.beginScan('ns/app', 'example.com/app', at(11));
          await finish(late, ['1', '2'], 12);
          const r = await finish(early, ['1', '2', '3'], 13);
          assert.deepEqual(r.added, ['3']);
          assert.deepEqual(await s.currentTags('ns/app'), ['1', '2']);
          assert.equal((await info(s, '1'))!.lastSeen, at(11).getTime());
          // The other way round: the later scan's new list stays current.
          early = await s.beginScan('ns/app', 'example.com/app', at(20));
          late = await s.beginScan('ns/app', 'example.com/app', at(21));
          await finish(late, ['2', '4'], 22);
          await finish(early, ['1', '2'], 23);
          assert.deepEqual(await s.currentTags('ns/app'), ['2', '4']);
          assert.deepEqual(await info(s, '4'), {
            firstSeen: at(21).getTime(),
            lastSeen: at(21).getTime(),
            initial: false,
          });
          // And the scans after them compare with the later one.
          const next = await scan(s, 'ns/app', ['2', '4', '5'], 30);
          assert.deepEqual([next.added, next.removed], [['5'], []]);
          assert.deepEqual(await s.currentTags('ns/app'), ['2', '4', '5']);
          assert.equal((await info(s, '1'))!.lastSeen, at(11).getTime());
        }),
      );

      test(
        'raw responses: each scan keeps its own, unchanged or not',
        withStore(
          async (s) => {
            const ids: number[] = [];
            for (let i = 0; i < 3; i++) {
              const id = await s.beginScan('ns/app', 'example.com/app', at(i));
              await s.finishScan(
                id,
                {
                  outcome: 'ok',
                  tags: ['t'],
                  requests: 1,
                  responses: [response(i, '{"name":"app","tags":["t"]}')],
                  endedAt: at(i),
                },
                diffTags,
              );
              ids.push(id);
            }
            const raw = await s.rawResponses('ns/app');
            assert.deepEqual(
              raw.map((r) => r.scanId),
              [ids[2], ids[1], ids[0]],
            );
            assert.deepEqual(
              raw.map((r) => r.responses[0]!.at),
              [at(2), at(1), at(0)].map((d) => d.toISOString()),
            );
            assert.deepEqual(
              raw.map((r) => r.startedAt.getTime()),
              [at(2), at(1), at(0)].map((d) => d.getTime()),
            );
          },
          { rawScansKept: 3 },
        ),
      );
    });

    describe('raw responses', () => {
      test(
        'kept for the last N scans per repository, without credentials',
        withStore(
          async (s) => {
            const ids: number[] = [];
            for (let i = 0; i < 4; i++) {
              const id = await s.beginScan('ns/app', 'example.com/app', at(i));
              await s.finishScan(
                id,
                { outcome: 'ok', tags: [`t${i}`], requests: 1, responses: [response(i)], endedAt: at(i) },
                diffTags,
              );
              ids.push(id);
            }
            const other = await s.beginScan('ns/other', 'example.com/other', at(9));
            await s.finishScan(
              other,
              { outcome: 'failed', error: 'x', requests: 1, responses: [response(9)], endedAt: at(9) },
              diffTags,
            );
            const raw = await s.rawResponses('ns/app');
            assert.deepEqual(
              raw.map((r) => r.scanId),
              [ids[3], ids[2]],
            );
            const r0 = raw[0]!.responses[0]!;
            assert.deepEqual(Object.keys(r0.headers), ['content-type']);
            assert.equal(r0.url, 'https://r.example/v2/app/tags/list?n=100&last=t3');
            assert.equal((await s.rawResponses('ns/app', ids[2])).length, 1);
            assert.equal((await s.rawResponses('ns/app', ids[0])).length, 0);
            assert.equal((await s.rawResponses('ns/other'))[0]!.outcome, 'failed');
            const dump = JSON.stringify(await s.rawResponses('ns/app'));
            assert.ok(!dump.includes('sekret') && !dump.includes('pw@') && !dump.includes('session'));
          },
          { rawScansKept: 2 },
        ),
      );

      test(
        'bounded in bytes: long bodies are cut and the record says so',
        withStore(
          async (s) => {
            const id = await s.beginScan('ns/app', 'example.com/app', at(0));
            const big = JSON.stringify({
              name: 'app',
              tags: Array.from({ length: 2000 }, (_, i) => `tag-${i}`),
            });
            await s.finishScan(
              id,
              {
                outcome: 'ok',
                tags: ['a'],
                requests: 3,
                responses: [response(0, big), response(1, big), response(2, big)],
                endedAt: at(0),
              },
              diffTags,
            );
            const [r] = await s.rawResponses('ns/app');
            assert.equal(r!.truncated, true);
            assert.ok(Buffer.byteLength(JSON.stringify(r!.responses)) <= 4096);
            assert.match(r!.responses[0]!.body, /…\[truncated \d+ bytes\]$/);
          },
          { rawBytesPerScan: 4096 },
        ),
      );

      test(
        'token fields in a body are redacted; none kept when rawScansKept is 0',
        withStore(async (s) => {
          const id = await s.beginScan('ns/app', 'example.com/app', at(0));
          await s.finishScan(
            id,
            {
              outcome: 'failed',
              error: 'x',
              requests: 1,
              responses: [response(0, '{"token":"abcdefgh123","expires_in":300}')],
              endedAt: at(0),
            },
            diffTags,
          );
          const body = (await s.rawResponses('ns/app'))[0]!.responses[0]!.body;
          assert.ok(!body.includes('abcdefgh123'));
          assert.match(body, /"expires_in":300/);
          const none = await open({ rawScansKept: 0 });
          try {
            const id2 = await none.beginScan('ns/x', 'x', at(0));
            await none.finishScan(
              id2,
              { outcome: 'ok', tags: ['a'], requests: 1, responses: [response(0)], endedAt: at(0) },
              diffTags,
            );
            assert.deepEqual(await none.rawResponses('ns/x'), []);
          } finally {
            await none.close();
          }
        }),
      );
    });

    describe('build times, policies, runs, events', () => {
      test(
        'build time cache distinguishes unknown from "no time"',
        withStore(async (s) => {
          const c = s.buildTimeCache();
          assert.equal(await c.get('sha256:1'), undefined);
          await c.set('sha256:1', null);
          assert.equal(await c.get('sha256:1'), null);
          await c.set('sha256:2', { digest: 'sha256:2', created: at(3), source: 'annotation' });
          assert.deepEqual(await s.buildTimeCache().get('sha256:2'), {
            digest: 'sha256:2',
            created: at(3),
            source: 'annotation',
          });
        }),
      );

      test(
        'commit batches: opened, moved, closed; the last word in one write wins',
        withStore(async (s) => {
          assert.deepEqual([...(await s.openBatches(['ns/a']))], []);
          await s.write({
            batches: [
              { automation: 'ns/a', openedAt: at(1) },
              { automation: 'ns/b', openedAt: at(2) },
            ],
          });
          assert.deepEqual([...(await s.openBatches(['ns/a', 'ns/b', 'ns/none']))].sort(), [
            ['ns/a', at(1)],
            ['ns/b', at(2)],
          ]);
          assert.deepEqual([...(await s.openBatches([]))], []);
          await s.write({
            batches: [
              { automation: 'ns/a', openedAt: null },
              { automation: 'ns/b', openedAt: at(5) },
              { automation: 'ns/c', openedAt: at(6) },
              { automation: 'ns/c', openedAt: null },
            ],
          });
          assert.deepEqual([...(await s.openBatches(['ns/a', 'ns/b', 'ns/c']))], [['ns/b', at(5)]]);
        }),
      );

      test(
        'policy state round-trips, selections are kept newest first',
        withStore(async (s) => {
          assert.equal(await s.getPolicyState('ns/p'), null);
          await s.write({
            policyStates: [
              {
                policy: 'ns/p',
                state: { specHash: 'h1', highWater: '1.2.0', highWaterAt: at(1), pending: null },
              },
            ],
          });
          const state = {
            specHash: 'h1',
            highWater: '1.2.0',
            highWaterAt: at(1),
            pending: { candidate: '1.1.0', count: 2, firstAt: at(2), lastAt: at(3) },
          };
          await s.write({ policyStates: [{ policy: 'ns/p', state }] });
          assert.deepEqual(await s.getPolicyState('ns/p'), state);
          const states = await s.policyStates(['ns/p', 'ns/none']);
          assert.deepEqual([...states.keys()], ['ns/p']);
          assert.deepEqual(states.get('ns/p'), state);
          await s.write({ selections: [{ policy: 'ns/p', at: at(1), candidate: '1.2.0', error: null }] });
          await s.write({
            selections: [{ policy: 'ns/p', at: at(2), candidate: null, error: 'empty tag list' }],
          });
          await s.write({
            selections: [
              {
                policy: 'ns/q',
                at: at(2),
                candidate: 'x',
                error: null,
                unverified: { tag: 'y', why: 'no signature tag' },
              },
            ],
          });
          const latest = await s.latestSelections(['ns/p', 'ns/q', 'ns/none']);
          assert.deepEqual(
            [...latest.entries()].map(([k, v]) => [k, v.policy, v.candidate, v.error]).sort(),
            [
              ['ns/p', 'ns/p', null, 'empty tag list'],
              ['ns/q', 'ns/q', 'x', null],
            ],
          );
          // spec.verify's passed-over tag is kept with the selection; none reads as null.
          assert.deepEqual(latest.get('ns/q')?.unverified, { tag: 'y', why: 'no signature tag' });
          assert.equal(latest.get('ns/p')?.unverified, null);
          const h = await s.selectionHistory('ns/p', 10);
          assert.deepEqual(
            h.map((x) => [x.candidate, x.error, x.at]),
            [
              [null, 'empty tag list', at(2)],
              ['1.2.0', null, at(1)],
            ],
          );
        }),
      );

      test(
        'runs and decisions',
        withStore(async (s) => {
          const run = await s.beginRun(at(0), 'run');
          await s.write({ decisions: { runId: run, decisions: [decision] } });
          const kept: Decision = {
            ...decision,
            policy: 'ns/q',
            action: 'keep',
            reason: 'downgrade-blocked',
            candidate: null,
          };
          await s.write({ decisions: { runId: run, decisions: [kept] } });
          assert.equal((await s.getRun(run))!.endedAt, null);
          await s.write({
            finishRun: { runId: run, result: { result: 'pushed', commit: 'abc' }, endedAt: at(1) },
          });
          const r = (await s.getRun(run))!;
          assert.deepEqual(r.result, { result: 'pushed', commit: 'abc' });
          assert.equal(r.kind, 'run');
          assert.deepEqual([r.at, r.endedAt], [at(0), at(1)]);
          const onlyP = await s.decisions({ policy: 'ns/p' });
          assert.equal(onlyP.length, 1);
          assert.equal(onlyP[0]!.reason, 'upgrade');
          assert.equal(onlyP[0]!.runKind, 'run');
          assert.deepEqual(onlyP[0]!.at, at(0));
          assert.equal((await s.decisions({ runId: run })).length, 2);
          assert.equal((await s.decisions({ runId: run + 1 })).length, 0);
          assert.equal((await s.decisions({ limit: 1 }))[0]!.policy, 'ns/q');
          assert.equal(await s.getRun(run + 1), null);
        }),
      );

      test(
        'events filter by kind, policy, repository and time',
        withStore(async (s) => {
          const event = (e: StoredEvent) => s.write({ events: [e] });
          await event({
            at: at(0),
            kind: 'downgrade-blocked',
            policy: 'ns/p',
            detail: { current: '2', candidate: '1' },
          });
          await event({ at: at(5), kind: 'stale-scan', policy: 'ns/p', repository: 'ns/r', detail: {} });
          await event({ at: at(9), kind: 'pin', policy: 'ns/q', detail: { line: 4 } });
          assert.equal((await s.events()).length, 3);
          assert.deepEqual(
            (await s.events({ policy: 'ns/p' })).map((e) => e.kind),
            ['stale-scan', 'downgrade-blocked'],
          );
          assert.deepEqual(
            (await s.events({ repository: 'ns/r' })).map((e) => e.kind),
            ['stale-scan'],
          );
          assert.deepEqual(
            (await s.events({ since: at(5) })).map((e) => e.kind),
            ['pin', 'stale-scan'],
          );
          await event({ at: at(7), kind: 'stale-scan', policy: 'ns/p', detail: { n: 2 } });
          const stale = await s.latestEvents('stale-scan', ['ns/p', 'ns/q']);
          assert.deepEqual([...stale.keys()], ['ns/p']);
          assert.deepEqual([stale.get('ns/p')!.at, stale.get('ns/p')!.detail], [at(7), { n: 2 }]);
          const [blocked] = await s.events({ kind: 'downgrade-blocked' });
          assert.deepEqual(blocked!.detail, { current: '2', candidate: '1' });
          assert.deepEqual([blocked!.at, blocked!.repository], [at(0), null]);
        }),
      );

      test(
        'a batch write applies everything in one go: digests, states, selections, decisions, events, the run',
        withStore(async (s) => {
          await scan(s, 'ns/app', ['1'], 0);
          const run = await s.beginRun(at(0), 'dry-run');
          await s.write({
            tagDigests: [{ repository: 'ns/app', tag: '1', digest: 'sha256:ccc', at: at(1) }],
            policyStates: [
              { policy: 'ns/p', state: { specHash: 'h', highWater: '1', highWaterAt: at(1), pending: null } },
            ],
            selections: [{ policy: 'ns/p', at: at(1), candidate: '1', error: null }],
            decisions: { runId: run, decisions: [decision, { ...decision, line: 4 }] },
            events: [{ at: at(1), kind: 'pin', policy: 'ns/p', detail: { line: 4 } }],
            finishRun: { runId: run, result: { ok: true }, endedAt: at(2) },
          });
          assert.equal((await s.tagInfo('ns/app', '1'))!.digest, 'sha256:ccc');
          assert.equal((await s.getPolicyState('ns/p'))!.highWater, '1');
          assert.equal((await s.selectionHistory('ns/p'))[0]!.candidate, '1');
          assert.deepEqual(
            (await s.decisions({ runId: run })).map((d) => [d.line, d.runKind]),
            [
              [4, 'dry-run'],
              [3, 'dry-run'],
            ],
          );
          assert.equal((await s.events({ kind: 'pin' })).length, 1);
          assert.deepEqual((await s.getRun(run))!.result, { ok: true });
          await s.write({});
        }),
      );

      test(
        'carried decisions: a sequence of passes reads back as a store that writes every row does',
        withStore(async (s) => {
          await checkCarriedSequence(s);
        }),
      );

      test(
        'a batch that fails part-way writes nothing',
        withStore(async (s) => {
          const run = await s.beginRun(at(0), 'run');
          // A decision of a run that does not exist breaks the batch after the state and the events.
          await assert.rejects(
            s.write({
              policyStates: [
                {
                  policy: 'ns/p',
                  state: { specHash: 'h', highWater: '9', highWaterAt: at(1), pending: null },
                },
              ],
              events: [{ at: at(1), kind: 'pin', detail: {} }],
              decisions: { runId: run + 1000, decisions: [decision] },
            }),
          );
          assert.equal(await s.getPolicyState('ns/p'), null);
          assert.deepEqual(await s.events(), []);
          assert.deepEqual(await s.decisions(), []);
        }),
      );
    });
  });
}

/**
 * A repository's history as pawl wrote it before scans had a list scan (SQLite 7, PostgreSQL 5):
 * every good scan moved every listed tag's row to itself, the unchanged scan 2 too. Literal
 * statements, the same on both backends.
 */
export function legacyHistory(): string[] {
  const sum = (tags: string[]) => `'${tagListChecksum(tags)}'`;
  const ms = (minute: number) => at(minute).getTime();
  const missing = JSON.stringify([{ kind: 'tags-missing', count: 1, tags: ['a'] }]);
  const body = JSON.stringify([{ ...response(20), url: 'https://r.example/v2/app/tags/list', headers: {} }]);
  return [
    `INSERT INTO scans (id, repository, image, started_at, ended_at, outcome, error, tag_count, checksum, added, removed, anomalies, requests) VALUES
      (1, 'ns/app', 'example.com/app', ${ms(0)}, ${ms(0)}, 'ok', NULL, 2, ${sum(['a', 'b'])}, '["a","b"]', '[]', '[]', 1),
      (2, 'ns/app', 'example.com/app', ${ms(10)}, ${ms(10)}, 'ok', NULL, 2, ${sum(['a', 'b'])}, '[]', '[]', '[]', 1),
      (3, 'ns/app', 'example.com/app', ${ms(15)}, ${ms(15)}, 'failed', 'registry said 503', NULL, NULL, '[]', '[]', '[]', 3),
      (4, 'ns/app', 'example.com/app', ${ms(20)}, ${ms(20)}, 'ok', NULL, 2, ${sum(['b', 'c'])}, '["c"]', '["a"]', '${missing}', 1)`,
    `INSERT INTO tags (repository, image, tag, first_seen, last_seen, first_scan_id, last_scan_id, initial) VALUES
      ('ns/app', 'example.com/app', 'a', ${ms(0)}, ${ms(10)}, 1, 2, 1),
      ('ns/app', 'example.com/app', 'b', ${ms(0)}, ${ms(20)}, 1, 4, 1),
      ('ns/app', 'example.com/app', 'c', ${ms(20)}, ${ms(20)}, 4, 4, 0)`,
    `INSERT INTO raw_responses (scan_id, repository, body, truncated) VALUES (4, 'ns/app', '${body}', 0)`,
  ];
}

/** A store holding `legacyHistory`, upgraded in place, reads as it did, and scans on from it. */
export async function checkLegacyHistory(s: Store): Promise<void> {
  const info = async (tag: string) => {
    const i = (await s.tagInfo('ns/app', tag))!;
    return [i.firstSeen.getTime(), i.lastSeen.getTime(), i.initial];
  };
  assert.deepEqual(await s.currentTags('ns/app'), ['b', 'c']);
  assert.deepEqual(Object.fromEntries(await s.currentTagsOf(['ns/app'])), { 'ns/app': ['b', 'c'] });
  assert.deepEqual(await info('a'), [at(0).getTime(), at(10).getTime(), true]);
  assert.deepEqual(await info('b'), [at(0).getTime(), at(20).getTime(), true]);
  assert.deepEqual(await info('c'), [at(20).getTime(), at(20).getTime(), false]);
  assert.deepEqual(
    (await s.currentTagInfos('ns/app')).map((i) => i.tag),
    ['b', 'c'],
  );
  const h = await s.scanHistory('ns/app');
  assert.deepEqual(
    h.map((x) => [x.id, x.outcome, x.tagCount, x.added, x.removed]),
    [
      [4, 'ok', 2, ['c'], ['a']],
      [3, 'failed', null, [], []],
      [2, 'ok', 2, [], []],
      [1, 'ok', 2, ['a', 'b'], []],
    ],
  );
  assert.deepEqual(h[0]!.anomalies, [{ kind: 'tags-missing', count: 1, tags: ['a'] }]);
  assert.equal((await s.lastGoodScan('ns/app'))!.id, 4);
  assert.deepEqual(await s.knownRepositories(), ['ns/app']);
  assert.deepEqual(
    (await s.rawResponses('ns/app')).map((r) => [r.scanId, r.responses[0]!.url]),
    [[4, 'https://r.example/v2/app/tags/list']],
  );
  // Scanning on: unchanged, then one tag gone.
  const same = await scan(s, 'ns/app', ['c', 'b'], 30);
  assert.ok(same.id > 4, `a new scan id after the legacy ones: ${same.id}`);
  assert.deepEqual([same.added, same.removed], [[], []]);
  assert.deepEqual(await info('b'), [at(0).getTime(), at(30).getTime(), true]);
  assert.deepEqual(await info('a'), [at(0).getTime(), at(10).getTime(), true]);
  const gone = await scan(s, 'ns/app', ['c'], 40);
  assert.deepEqual([gone.added, gone.removed], [[], ['b']]);
  assert.deepEqual(await info('b'), [at(0).getTime(), at(30).getTime(), true]);
  assert.deepEqual(await s.currentTags('ns/app'), ['c']);
}

/**
 * The rows an unchanged rescan writes, at 10 and 2,000 tags: the scan's insert and its end, the
 * image's heads at each, and its raw response, nothing that grows with the list; a changed list
 * moves the rows (what a change costs). `written(fn)`: the rows `fn` inserted, updated or deleted, by table (the backend's
 * triggers count them).
 */
export async function checkUnchangedRescanWrites(
  store: Store,
  written: (fn: () => Promise<unknown>) => Promise<Record<string, number>>,
): Promise<void> {
  const rescan = (repo: string, tags: string[], minute: number) => async () => {
    const id = await store.beginScan(repo, 'example.com/app', at(minute));
    await store.finishScan(
      id,
      { outcome: 'ok', tags, requests: 1, responses: [response(minute)], endedAt: at(minute) },
      diffTags,
    );
  };
  for (const n of [10, 2000]) {
    const tags = Array.from({ length: n }, (_, i) => `1.${i}.0`);
    const repo = `ns/app${n}`;
    assert.deepEqual(await written(rescan(repo, tags, 0)), {
      raw_responses: 1,
      scan_heads: 2,
      scans: 2,
      tags: n,
    });
    for (const minute of [1, 2, 3])
      assert.deepEqual(await written(rescan(repo, [...tags].reverse(), minute)), {
        raw_responses: 1,
        scan_heads: 2,
        scans: 2,
      });
    // One tag more: the rows move to the new list, one new row.
    assert.deepEqual(await written(rescan(repo, [...tags, '9.9.9'], 4)), {
      raw_responses: 1,
      scan_heads: 2,
      scans: 2,
      tags: n + 1,
    });
    assert.equal((await store.tagInfo(repo, '1.0.0'))!.lastSeen.getTime(), at(4).getTime());
  }
}

/**
 * Two repositories' scans and two policies' selections as pawl wrote them before scan_heads and
 * selection_heads (SQLite 9, PostgreSQL 7), interleaved: ns/a scanned as two images, with a
 * failed scan and one left running by a crash. Literal statements, the same on both backends.
 */
export function legacyHeads(): string[] {
  const ms = (minute: number) => at(minute).getTime();
  const ok = (id: number, repo: string, image: string, tags: string[], list = id) =>
    `(${id}, '${repo}', '${image}', ${ms(id)}, ${ms(id)}, 'ok', NULL, ${tags.length}, '${tagListChecksum(tags)}', '[]', '[]', '[]', 1, ${list})`;
  return [
    `INSERT INTO scans (id, repository, image, started_at, ended_at, outcome, error, tag_count, checksum, added, removed, anomalies, requests, list_scan_id) VALUES
      ${ok(1, 'ns/a', 'one.example/a', ['1'])},
      ${ok(2, 'ns/b', 'example.com/b', ['x'])},
      (3, 'ns/a', 'one.example/a', ${ms(3)}, ${ms(3)}, 'failed', 'registry said 503', NULL, NULL, '[]', '[]', '[]', 3, NULL),
      ${ok(4, 'ns/b', 'example.com/b', ['x'], 2)},
      ${ok(5, 'ns/a', 'two.example/a', ['9'])},
      (6, 'ns/a', 'one.example/a', ${ms(6)}, NULL, 'running', NULL, NULL, NULL, '[]', '[]', '[]', 0, NULL)`,
    `INSERT INTO tags (repository, image, tag, first_seen, last_seen, first_scan_id, last_scan_id, initial) VALUES
      ('ns/a', 'one.example/a', '1', ${ms(1)}, ${ms(1)}, 1, 1, 1),
      ('ns/b', 'example.com/b', 'x', ${ms(2)}, ${ms(2)}, 2, 2, 1),
      ('ns/a', 'two.example/a', '9', ${ms(5)}, ${ms(5)}, 5, 5, 1)`,
    `INSERT INTO selections (id, policy, at, candidate, error, unverified) VALUES
      (1, 'ns/p', ${ms(1)}, '1', NULL, NULL), (2, 'ns/q', ${ms(1)}, 'x', NULL, NULL),
      (3, 'ns/p', ${ms(2)}, NULL, 'empty tag list', NULL), (4, 'ns/p', ${ms(3)}, '2', NULL, NULL)`,
  ];
}

/** A store holding `legacyHeads`, upgraded in place: each repository's and policy's history and newest as before. */
export async function checkLegacyHeads(s: Store): Promise<void> {
  const selections = async (policy: string) => (await s.selectionHistory(policy, 100)).map((x) => x.id);
  assert.deepEqual(await selections('ns/p'), [4, 3, 1]);
  assert.deepEqual(await selections('ns/q'), [2]);
  const newest = await s.latestSelections(['ns/p', 'ns/q', 'ns/none']);
  assert.deepEqual([...newest.values()].map((x) => [x.policy, x.candidate]).sort(), [
    ['ns/p', '2'],
    ['ns/q', 'x'],
  ]);
  await s.write({ selections: [{ policy: 'ns/q', at: at(9), candidate: 'y', error: null }] });
  assert.deepEqual(
    (await s.selectionHistory('ns/q')).map((x) => x.candidate),
    ['y', 'x'],
  );
  const history = async (repo: string) => (await s.scanHistory(repo, 100)).map((x) => x.id);
  assert.deepEqual(await history('ns/a'), [6, 5, 3, 1]);
  assert.deepEqual(await history('ns/b'), [4, 2]);
  assert.deepEqual(await s.knownRepositories(), ['ns/a', 'ns/b']);
  const latest = await s.latestScans(['ns/a', 'ns/b']);
  assert.deepEqual(
    ['ns/a', 'ns/b'].map((n) => [latest.get(n)!.finished!.id, latest.get(n)!.good!.id]),
    [
      [5, 5],
      [4, 4],
    ],
  );
  assert.equal((await s.lastScan('ns/a'))!.outcome, 'running');
  assert.deepEqual(Object.fromEntries(await s.currentTagsOf(['ns/a', 'ns/b'])), {
    'ns/a': ['9'],
    'ns/b': ['x'],
  });
  // Scanning on, a day later: the scan left running is interrupted, and each new scan compares
  // with its own image's last good one and follows the repository's newest scan.
  const a = await scan(s, 'ns/a', ['1', '2'], 24 * 60, 'one.example/a');
  assert.deepEqual([a.added, a.removed], [['2'], []]);
  const b = await scan(s, 'ns/b', ['x'], 24 * 60, 'example.com/b');
  assert.deepEqual([b.added, b.removed], [[], []]);
  assert.deepEqual(await history('ns/a'), [a.id, 6, 5, 3, 1]);
  assert.deepEqual(await history('ns/b'), [b.id, 4, 2]);
  assert.equal((await s.scanHistory('ns/a'))[1]!.outcome, 'failed');
  const after = (await s.latestScans(['ns/a'])).get('ns/a')!;
  assert.deepEqual([after.finished!.id, after.good!.id], [a.id, a.id]);
  assert.deepEqual(await s.currentTags('ns/a'), ['1', '2']);
}
