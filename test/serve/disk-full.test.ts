/**
 * A full disk under the state directory (issue 22): the daemon's state database is on a small
 * tmpfs that the test fills. While no write can land, a scan names the cause (not "no scan with
 * id N") and `/readyz` answers 503 `store-unwritable`; once space is freed the daemon writes again,
 * reports ready, and the pushed tag reaches Git.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { diffTags } from '../../src/scan/index.js';
import { openStoreFrom } from '../../src/store/index.js';
import { pushTags } from '../helpers/push.js';
import { eventually, startServe, type ServeProcess } from '../helpers/serve.js';
import type { World } from '../helpers/world.js';
import { HOOK_PATH, RECEIVER_YAML, oneAppWorld, postEvent } from './fixtures.js';

/** Writes `path` until the file system says it is full; the file's size. */
async function fill(path: string): Promise<number> {
  const file = await open(path, 'a');
  let size = 0;
  try {
    for (const chunk of [1 << 20, 1 << 12, 1 << 9]) {
      const bytes = Buffer.alloc(chunk, 1);
      for (;;) {
        try {
          await file.write(bytes);
          size += chunk;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
          break;
        }
      }
    }
  } finally {
    await file.close().catch(() => undefined);
  }
  return size;
}

async function readyz(
  serve: ServeProcess,
): Promise<{ code: number; body: { status: string; reason?: string } }> {
  const res = await fetch(`http://${serve.admin}/readyz`);
  return { code: res.status, body: (await res.json()) as { status: string; reason?: string } };
}

/** A tmpfs of its own (CI runs as root; the image test mounts the same way). */
async function smallDisk(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'pawl-full-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', dir]);
  return dir;
}

async function unmount(dir: string | undefined): Promise<void> {
  if (dir === undefined) return;
  execFileSync('umount', ['-l', dir]);
  await rm(dir, { recursive: true, force: true });
}

describe('the SQLite store on a full disk', () => {
  let disk: string | undefined;
  after(() => unmount(disk));

  test('a scan whose start was lost names the cause; the store is unwritable until a commit lands', async () => {
    disk = await smallDisk();
    const store = await openStoreFrom({ kind: 'state-dir', stateDir: join(disk, 'state') });
    const endedAt = new Date('2026-12-01T00:00:00Z');
    const first = await store.beginScan('flux-system/app', 'r.example/app', endedAt);
    await store.finishScan(first, { outcome: 'ok', tags: ['1.0.0'], requests: 1, endedAt }, diffTags);
    await store.flush();
    assert.equal(store.unwritable?.(), null);

    await fill(join(disk, 'filler'));
    // The start is written into the open group; its commit then finds no space.
    const second = await store.beginScan('flux-system/app', 'r.example/app', endedAt);
    await assert.rejects(store.flush(), /database or disk is full/);
    assert.match(
      store.unwritable?.() ?? '',
      /cannot commit to the state database .*database or disk is full/,
    );
    await assert.rejects(
      store.finishScan(second, { outcome: 'ok', tags: ['1.1.0'], requests: 1, endedAt }, diffTags),
      (err: Error) => {
        assert.match(err.message, /^the scan could not be recorded: .*database or disk is full/);
        return true;
      },
    );
    await store.flush().catch(() => undefined);

    await rm(join(disk, 'filler'));
    const third = await store.beginScan('flux-system/app', 'r.example/app', endedAt);
    const done = await store.finishScan(
      third,
      { outcome: 'ok', tags: ['1.1.0'], requests: 1, endedAt },
      diffTags,
    );
    await store.flush();
    assert.equal(done.id, third);
    assert.equal(store.unwritable?.(), null, 'a commit that lands clears it');
    await store.close();
  });
});

describe('a full disk under the state directory', () => {
  let w: World | undefined;
  let serve: ServeProcess | undefined;
  let mounted: string | undefined;
  after(async () => {
    await serve?.stop('SIGKILL');
    await unmount(mounted);
    await w?.close();
  });

  test('is reported by the scan and by /readyz, and writes resume once space is freed', async () => {
    w = await oneAppWorld({
      extra: { 'receiver.yaml': RECEIVER_YAML },
      tags: ['1.0.0'],
      // Scans keep coming while the disk is full, each starting and finishing its record.
      intervals: '1s',
    });
    mounted = await smallDisk();
    const stateDir = join(mounted, 'state');
    serve = await startServe({ configDir: w.configDir, stateDir, args: ['--no-watch'] });
    await serve.waitForLog((r) => r.msg === 'pass', 'the first pass');
    assert.equal((await readyz(serve)).code, 200);

    const filler = join(mounted, 'filler');
    assert.ok((await fill(filler)) > 0, 'the tmpfs took some filler');
    await pushTags(w.registry.url, 'team/app', ['1.1.0']);
    const seen = serve.records().length;
    // Accepted only if it could be queued; else refused so that the sender retries (nothing lost).
    const answer = await postEvent(serve.hookUrl(HOOK_PATH), '1.1.0');
    assert.ok(answer === 202 || answer === 503, `answered ${answer}`);

    const unready = await eventually(async () => {
      const r = await readyz(serve!);
      return r.code === 503 ? r : undefined;
    }, '/readyz answering 503 while the disk is full');
    assert.equal(unready.body.status, 'store-unwritable', JSON.stringify(unready.body));
    assert.match(unready.body.reason ?? '', /database or disk is full/);
    // The scans that come due meanwhile fail with the cause, not with "no scan with id N".
    const failed = await serve.waitForLog(
      (r) =>
        serve!.records().indexOf(r) >= seen &&
        (r.msg === 'scan failed; the previous tags stay current' ||
          (r.msg === 'run failed; retrying with backoff' && /app/.test(JSON.stringify(r)))),
      'a scan failing while the disk is full',
    );
    const said = JSON.stringify(failed);
    assert.match(said, /database or disk is full/, said);
    assert.doesNotMatch(said, /no scan with id/, said);

    await rm(filler);
    // The repository's next scan (a webhook names it again) lands, and with it the write.
    await eventually(async () => {
      await postEvent(serve!.hookUrl(HOOK_PATH), '1.1.0');
      const r = await readyz(serve!);
      return r.code === 200 ? r : undefined;
    }, '/readyz ready again once space is freed');
    await eventually(
      async () =>
        (await w!.git.show(w!.repoName, 'main', 'apps/app.yaml')).includes('team/app:1.1.0')
          ? true
          : undefined,
      'the pushed tag committed to Git',
    );
  });
});
