/**
 * The LocalCoordinator's queue written through to the SQLite store (issue 22), at the unit level:
 * what `publish` queued is committed when it resolves (another connection reads it), a new
 * coordinator on the same file reads it back and offers it on `resume`, a partial ack keeps the
 * events that came later and a full one deletes the row; and the scans a dead process left
 * `running` are marked interrupted at start.
 */
import { afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalCoordinator, type WorkItem, type WorkSource } from '../../src/serve/cluster/index.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/index.js';

const KEY = 'ImageUpdateAutomation/flux-system/fleet';
const item = (tag: string, firstAt: number): WorkItem => ({
  key: KEY,
  repositories: ['flux-system/app'],
  tags: [`flux-system/app:${tag}`],
  firstAt,
  events: 1,
});

describe('the local work queue, durable in SQLite', () => {
  let dir = '';
  const open: SqliteStore[] = [];
  const store = () => {
    const s = openSqliteStore(dir, {});
    open.push(s);
    return s;
  };
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close().catch(() => undefined);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('published work is committed, read back by the next process, and deleted once done', async () => {
    dir = await mkdtemp(join(tmpdir(), 'pawl-queue-'));
    const first = new LocalCoordinator(Date.now, store());
    await first.start();
    await first.publish([item('1.1.0', 1000), item('1.2.0', 2000)]);
    // Not left to the store's group commit: a second connection sees it at once.
    const other = store();
    const [row] = await other.queuedWork();
    assert.deepEqual(
      { ...row, version: undefined },
      {
        key: KEY,
        repositories: ['flux-system/app'],
        tags: ['flux-system/app:1.1.0', 'flux-system/app:1.2.0'],
        events: 2,
        firstAt: 1000,
        version: undefined,
      },
    );
    // The process dies here (no close, no ack). The next one reads the queue and offers it.
    const next = new LocalCoordinator(Date.now, store());
    await next.start();
    const offered: [string, WorkSource][] = [];
    next.onWork((key, source) => offered.push([key, source]));
    next.resume();
    assert.deepEqual(offered, [[KEY, 'takeover']]);

    const lease = (await next.claim(KEY))!;
    const taken = (await next.take(lease))!;
    assert.equal(taken.events, 2);
    // One more event while the run works: the ack keeps it queued, durably.
    await next.publish([item('1.3.0', 3000)]);
    assert.equal(await next.ack(lease, taken), false);
    const [rest] = await other.queuedWork();
    assert.equal(rest?.events, 1);
    assert.ok(rest.tags.includes('flux-system/app:1.3.0'));
    // A version newer than any before the restart: the next publish cannot collide with it.
    assert.ok(rest.version > row!.version);

    const again = (await next.take(lease))!;
    assert.equal(await next.ack(lease, again), true);
    assert.equal(await next.take(lease), null);
    await next.release(lease);
    // The delete rides on the store's group commit; flushed, every connection sees it.
    for (const s of open) await s.flush();
    assert.deepEqual(await other.queuedWork(), []);
  });

  test('scans left running by a process that is gone are marked interrupted', async () => {
    dir = await mkdtemp(join(tmpdir(), 'pawl-queue-'));
    const s = store();
    const done = await s.beginScan('flux-system/done', 'r/done', new Date(1000));
    await s.finishScan(
      done,
      { outcome: 'ok', tags: ['1.0.0'], requests: 1, endedAt: new Date(1100) },
      () => ({
        added: [],
        removed: [],
        anomalies: [],
      }),
    );
    const left = await s.beginScan('flux-system/app', 'r/app', new Date(2000));
    assert.deepEqual(await s.interruptRunningScans(), [left]);
    const scan = await s.lastFinishedScan('flux-system/app');
    assert.equal(scan?.id, left);
    assert.equal(scan?.outcome, 'failed');
    assert.match(scan?.error ?? '', /interrupted/);
    assert.equal((await s.lastFinishedScan('flux-system/done'))?.outcome, 'ok');
    assert.deepEqual(await s.interruptRunningScans(), []);
  });
});
