/**
 * The serve lock file's edges without a daemon (src/serve/lock.ts): which lock is stale — its
 * pid gone on this host, this very pid (a container restarted with the same pid), a holder on
 * another host that stopped touching it for a minute — which is not, and a release that removes
 * only its own lock. The lock's age is its mtime, so a lock last touched long ago is made by
 * setting the mtime, not by waiting.
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { acquireServeLock, LOCK_SUFFIX } from '../../src/serve/lock.js';
import { silentLogger } from '../../src/util/log.js';

let dir: string;
let db: string;
let lockPath: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pawl-lock-'));
  db = join(dir, 'pawl.db');
  lockPath = db + LOCK_SUFFIX;
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A pid that ran and has exited (its process reaped). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  const pid = child.pid!;
  await new Promise((r) => child.once('exit', r));
  return pid;
}

async function plant(holder: unknown, ageMs = 0): Promise<void> {
  await writeFile(lockPath, typeof holder === 'string' ? holder : JSON.stringify(holder) + '\n');
  const t = new Date(Date.now() - ageMs);
  await utimes(lockPath, t, t);
}

async function holderNow(): Promise<{ pid: number; host: string; startedAt: string }> {
  return JSON.parse(await readFile(lockPath, 'utf8')) as { pid: number; host: string; startedAt: string };
}

async function takes(): Promise<void> {
  const lock = await acquireServeLock(db, silentLogger);
  try {
    const h = await holderNow();
    assert.deepEqual([h.pid, h.host], [process.pid, hostname()], 'the lock now names this process');
  } finally {
    await lock.release();
  }
  assert.ok(!existsSync(lockPath), 'its own release removes it');
}

async function refused(pid: number): Promise<void> {
  const before = await readFile(lockPath, 'utf8');
  await assert.rejects(acquireServeLock(db, silentLogger), (err: Error) => {
    assert.match(err.message, /another pawl serve is using the SQLite store/);
    if (pid > 0) assert.match(err.message, new RegExp(`pid ${pid} `));
    return true;
  });
  assert.equal(await readFile(lockPath, 'utf8'), before, 'the holder’s lock is left as it was');
}

const MINUTE = 60_000;

describe('the serve lock file: stale or held', () => {
  test('no lock: taken, and released', async () => {
    await takes();
  });

  test('this host, a pid that still runs, touched just now: refused, naming it', async () => {
    await plant({ pid: process.ppid, host: hostname(), startedAt: 'earlier' });
    await refused(process.ppid);
  });

  test('this host, a pid that still runs, untouched for over a minute: stale by age (the pid may be reused by now)', async () => {
    await plant({ pid: process.ppid, host: hostname(), startedAt: 'earlier' }, MINUTE + 5_000);
    await takes();
  });

  test('this host, a pid that is gone, touched just now: stale at once', async () => {
    await plant({ pid: await deadPid(), host: hostname(), startedAt: 'earlier' });
    await takes();
  });

  test('this host and this very pid (a restarted container): stale at once', async () => {
    await plant({ pid: process.pid, host: hostname(), startedAt: '2026-01-01T00:00:00.000Z' });
    await takes();
  });

  test('another host: its pid means nothing here; fresh is held, whatever the pid', async () => {
    const gone = await deadPid();
    await plant({ pid: gone, host: 'elsewhere.example', startedAt: 'earlier' });
    await refused(gone);
    await plant({ pid: process.pid, host: 'elsewhere.example', startedAt: 'earlier' });
    await refused(process.pid);
  });

  test('another host: held at 59 s untouched, stale at 61 s', async () => {
    await plant({ pid: 4242, host: 'elsewhere.example', startedAt: 'earlier' }, MINUTE - 1_000);
    await refused(4242);
    await plant({ pid: 4242, host: 'elsewhere.example', startedAt: 'earlier' }, MINUTE + 1_000);
    await takes();
  });

  test('a half-written lock is judged by its age alone', async () => {
    await plant('{"pid": 12');
    await refused(0);
    await plant('{"pid": 12', MINUTE + 1_000);
    await takes();
  });
});

describe('the serve lock file: release', () => {
  test('a release leaves a lock another process has written since', async () => {
    const lock = await acquireServeLock(db, silentLogger);
    await plant({ pid: process.ppid, host: hostname(), startedAt: 'later' });
    await lock.release();
    assert.equal((await holderNow()).pid, process.ppid);
  });

  test('a release leaves the lock of a later process with the same pid (a restarted container)', async () => {
    const lock = await acquireServeLock(db, silentLogger);
    const mine = await holderNow();
    await plant({ ...mine, startedAt: '2099-01-01T00:00:00.000Z' });
    await lock.release();
    assert.equal((await holderNow()).startedAt, '2099-01-01T00:00:00.000Z');
  });
});
