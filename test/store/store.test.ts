import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import {
  openStore,
  storeOptionsFromEnv,
  SCHEMA_VERSION,
  tagListChecksum,
  type Store,
} from '../../src/store/index.js';
import { diffTags } from '../../src/scan/index.js';
import type { RecordedResponse } from '../../src/scan/registry/types.js';

const T0 = new Date('2026-01-01T00:00:00Z');
const at = (minutes: number) => new Date(T0.getTime() + minutes * 60_000);

function scan(store: Store, repo: string, tags: string[], minute: number, image = 'example.com/app') {
  const id = store.beginScan(repo, image, at(minute));
  return store.finishScan(id, { outcome: 'ok', tags, requests: 2, endedAt: at(minute) }, diffTags);
}

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'pawl-store-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe('openStore', () => {
  test('creates the directory and the database, migrates from empty, reopens idempotently', (t) => {
    const dir = join(tempDir(t), 'nested', 'state');
    const s1 = openStore(dir);
    assert.equal(s1.schemaVersion(), SCHEMA_VERSION);
    scan(s1, 'ns/app', ['1.0.0'], 0);
    s1.close();
    assert.ok(readdirSync(dir).includes('pawl.db'));
    const s2 = openStore(dir);
    assert.equal(s2.schemaVersion(), SCHEMA_VERSION);
    assert.deepEqual(s2.currentTags('ns/app'), ['1.0.0']);
    const db = new Database(join(dir, 'pawl.db'), { readonly: true });
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
    db.close();
    s2.close();
  });

  test('refuses a database from a newer pawl, saying it is safe to move away', (t) => {
    const dir = tempDir(t);
    openStore(dir).close();
    const db = new Database(join(dir, 'pawl.db'));
    db.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    db.close();
    assert.throws(() => openStore(dir), /newer than this pawl understands.*move the database away/);
  });

  test('a file that is not a database gives an error naming it', (t) => {
    const dir = tempDir(t);
    writeFileSync(
      join(dir, 'pawl.db'),
      'not a database at all, just some text that is long enough'.repeat(100),
    );
    assert.throws(
      () => openStore(dir),
      (err: Error) => err.message.includes('pawl.db') && /safe/.test(err.message),
    );
  });
});

describe('scans', () => {
  test('first good scan: everything added, all tags initial, checksum of sorted tags', () => {
    const s = openStore(':memory:');
    const r = scan(s, 'ns/app', ['b', 'a', 'c', 'a'], 0);
    assert.equal(r.outcome, 'ok');
    assert.equal(r.tagCount, 3);
    assert.deepEqual(r.added, ['a', 'b', 'c']);
    assert.deepEqual(r.removed, []);
    assert.deepEqual(r.anomalies, []);
    assert.equal(r.checksum, tagListChecksum(['c', 'b', 'a']));
    assert.equal(s.tagInfo('ns/app', 'a')?.initial, true);
    assert.equal(s.tagInfo('ns/app', 'zzz'), null);
  });

  test('later scans: added and removed, tags-missing, first/last seen, new tags not initial', () => {
    const s = openStore(':memory:');
    scan(s, 'ns/app', ['1.0.0', '1.1.0', '1.2.0'], 0);
    const r = scan(s, 'ns/app', ['1.0.0', '1.2.0', '1.3.0'], 10);
    assert.deepEqual(r.added, ['1.3.0']);
    assert.deepEqual(r.removed, ['1.1.0']);
    assert.deepEqual(r.anomalies, [{ kind: 'tags-missing', count: 1, tags: ['1.1.0'] }]);
    assert.deepEqual(s.currentTags('ns/app'), ['1.0.0', '1.2.0', '1.3.0']);
    const old = s.tagInfo('ns/app', '1.0.0')!;
    assert.deepEqual([old.firstSeen, old.lastSeen, old.initial], [at(0), at(10), true]);
    const fresh = s.tagInfo('ns/app', '1.3.0')!;
    assert.deepEqual([fresh.firstSeen, fresh.lastSeen, fresh.initial], [at(10), at(10), false]);
    // A vanished tag is not in the current image's scan; its info remains as last observed.
    assert.equal(s.tagInfo('ns/app', '1.1.0')!.lastSeen.getTime(), at(0).getTime());
  });

  test('empty list and count-drop anomalies', () => {
    const s = openStore(':memory:');
    const many = Array.from({ length: 50 }, (_, i) => `t${i}`);
    scan(s, 'ns/app', many, 0);
    const small = scan(s, 'ns/app', many.slice(0, 46), 1); // drop of 4: below the absolute threshold
    assert.deepEqual(
      small.anomalies.map((a) => a.kind),
      ['tags-missing'],
    );
    const big = scan(s, 'ns/app', many.slice(0, 40), 2); // 46 → 40: 6 tags, 13%
    assert.deepEqual(
      big.anomalies.map((a) => a.kind),
      ['tags-missing', 'count-drop'],
    );
    assert.deepEqual(big.anomalies[1], { kind: 'count-drop', from: 46, to: 40 });
    const empty = scan(s, 'ns/app', [], 3);
    assert.deepEqual(
      empty.anomalies.map((a) => a.kind),
      ['empty', 'tags-missing', 'count-drop'],
    );
    assert.deepEqual(s.currentTags('ns/app'), []);
  });

  test('count-drop needs 10% as well as 5 tags', () => {
    const prev = Array.from({ length: 100 }, (_, i) => `t${i}`);
    assert.deepEqual(
      diffTags(prev, prev.slice(0, 91)).anomalies.map((a) => a.kind),
      ['tags-missing'],
    );
    assert.deepEqual(
      diffTags(prev, prev.slice(0, 90)).anomalies.map((a) => a.kind),
      ['tags-missing', 'count-drop'],
    );
  });

  test('a failed scan stores only its row; the previous good data stays current', () => {
    const s = openStore(':memory:');
    scan(s, 'ns/app', ['1', '2'], 0);
    const id = s.beginScan('ns/app', 'example.com/app', at(5));
    const r = s.finishScan(
      id,
      {
        outcome: 'failed',
        error: 'registry said 503',
        requests: 4,
        endedAt: at(6),
      },
      diffTags,
    );
    assert.equal(r.outcome, 'failed');
    assert.equal(r.tagCount, null);
    assert.deepEqual(s.currentTags('ns/app'), ['1', '2']);
    assert.equal(s.lastScan('ns/app')!.id, id);
    assert.equal(s.lastScan('ns/app')!.error, 'registry said 503');
    assert.equal(s.lastGoodScan('ns/app')!.tagCount, 2);
    assert.equal(s.tagInfo('ns/app', '1')!.lastSeen.getTime(), at(0).getTime());
    // The next good scan compares with the last good one, not the failure.
    const next = scan(s, 'ns/app', ['1', '2', '3'], 10);
    assert.deepEqual(next.added, ['3']);
    assert.deepEqual(next.removed, []);
    assert.throws(
      () => s.finishScan(id, { outcome: 'ok', tags: [], requests: 0, endedAt: at(11) }, diffTags),
      /already finished/,
    );
  });

  test('history is newest first, per repository, and a running scan shows as running', () => {
    const s = openStore(':memory:');
    scan(s, 'ns/a', ['1'], 0);
    scan(s, 'ns/b', ['x'], 1);
    scan(s, 'ns/a', ['1', '2'], 2);
    s.beginScan('ns/a', 'example.com/app', at(3));
    const h = s.scanHistory('ns/a', 10);
    assert.deepEqual(
      h.map((x) => x.outcome),
      ['running', 'ok', 'ok'],
    );
    assert.deepEqual(
      h.map((x) => x.tagCount),
      [null, 2, 1],
    );
    assert.equal(s.scanHistory('ns/a', 1).length, 1);
    assert.equal(s.lastFinishedScan('ns/a')!.tagCount, 2);
  });

  test('a changed image starts afresh: its tags are initial and nothing is missing', () => {
    const s = openStore(':memory:');
    scan(s, 'ns/app', ['1', '2'], 0, 'old.example/app');
    const r = scan(s, 'ns/app', ['9'], 1, 'new.example/app');
    assert.deepEqual(r.removed, []);
    assert.deepEqual(r.anomalies, []);
    assert.deepEqual(s.currentTags('ns/app'), ['9']);
    assert.equal(s.tagInfo('ns/app', '9')!.initial, true);
    assert.equal(s.tagInfo('ns/app', '1'), null);
  });

  test('tag digests', () => {
    const s = openStore(':memory:');
    scan(s, 'ns/app', ['1'], 0);
    assert.equal(s.tagInfo('ns/app', '1')!.digest, null);
    s.setTagDigest('ns/app', '1', 'sha256:aaa');
    s.setTagDigest('ns/app', '1', 'sha256:bbb');
    assert.equal(s.tagInfo('ns/app', '1')!.digest, 'sha256:bbb');
    assert.equal(s.currentTagInfos('ns/app')[0]!.digest, 'sha256:bbb');
  });
});

function response(i: number, body = `{"name":"app","tags":["t${i}"]}`): RecordedResponse {
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

describe('raw responses', () => {
  test('kept for the last N scans per repository, without credentials', () => {
    const s = openStore(':memory:', { rawScansKept: 2 });
    const ids: number[] = [];
    for (let i = 0; i < 4; i++) {
      const id = s.beginScan('ns/app', 'example.com/app', at(i));
      s.finishScan(
        id,
        {
          outcome: 'ok',
          tags: [`t${i}`],
          requests: 1,
          responses: [response(i)],
          endedAt: at(i),
        },
        diffTags,
      );
      ids.push(id);
    }
    const other = s.beginScan('ns/other', 'example.com/other', at(9));
    s.finishScan(
      other,
      {
        outcome: 'failed',
        error: 'x',
        requests: 1,
        responses: [response(9)],
        endedAt: at(9),
      },
      diffTags,
    );
    const raw = s.rawResponses('ns/app');
    assert.deepEqual(
      raw.map((r) => r.scanId),
      [ids[3], ids[2]],
    );
    const r0 = raw[0]!.responses[0]!;
    assert.deepEqual(Object.keys(r0.headers), ['content-type']);
    assert.equal(r0.url, 'https://r.example/v2/app/tags/list?n=100&last=t3');
    assert.equal(s.rawResponses('ns/app', ids[2]).length, 1);
    assert.equal(s.rawResponses('ns/app', ids[0]).length, 0);
    assert.equal(s.rawResponses('ns/other')[0]!.outcome, 'failed');
    const dump = JSON.stringify(s.rawResponses('ns/app'));
    assert.ok(!dump.includes('sekret') && !dump.includes('pw@') && !dump.includes('session'));
  });

  test('bounded in bytes: long bodies are cut and the record says so', () => {
    const s = openStore(':memory:', { rawBytesPerScan: 4096 });
    const id = s.beginScan('ns/app', 'example.com/app', at(0));
    const big = JSON.stringify({ name: 'app', tags: Array.from({ length: 2000 }, (_, i) => `tag-${i}`) });
    s.finishScan(
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
    const [r] = s.rawResponses('ns/app');
    assert.equal(r!.truncated, true);
    assert.ok(Buffer.byteLength(JSON.stringify(r!.responses)) <= 4096);
    assert.match(r!.responses[0]!.body, /…\[truncated \d+ bytes\]$/);
  });

  test('token fields in a body are redacted', () => {
    const s = openStore(':memory:');
    const id = s.beginScan('ns/app', 'example.com/app', at(0));
    s.finishScan(
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
    const body = s.rawResponses('ns/app')[0]!.responses[0]!.body;
    assert.ok(!body.includes('abcdefgh123'));
    assert.match(body, /"expires_in":300/);
  });
});

describe('build times, policies, runs, events', () => {
  test('build time cache distinguishes unknown from "no time"', () => {
    const s = openStore(':memory:');
    const c = s.buildTimeCache();
    assert.equal(c.get('sha256:1'), undefined);
    c.set('sha256:1', null);
    assert.equal(c.get('sha256:1'), null);
    c.set('sha256:2', { digest: 'sha256:2', created: at(3), source: 'annotation' });
    assert.deepEqual(s.buildTimeCache().get('sha256:2'), {
      digest: 'sha256:2',
      created: at(3),
      source: 'annotation',
    });
  });

  test('policy state round-trips, selections are kept newest first', () => {
    const s = openStore(':memory:');
    assert.equal(s.getPolicyState('ns/p'), null);
    s.setPolicyState('ns/p', { specHash: 'h1', highWater: '1.2.0', highWaterAt: at(1), pending: null });
    s.setPolicyState('ns/p', {
      specHash: 'h1',
      highWater: '1.2.0',
      highWaterAt: at(1),
      pending: { candidate: '1.1.0', count: 2, firstAt: at(2), lastAt: at(3) },
    });
    assert.deepEqual(s.getPolicyState('ns/p'), {
      specHash: 'h1',
      highWater: '1.2.0',
      highWaterAt: at(1),
      pending: { candidate: '1.1.0', count: 2, firstAt: at(2), lastAt: at(3) },
    });
    s.recordSelection('ns/p', at(1), '1.2.0', null);
    s.recordSelection('ns/p', at(2), null, 'empty tag list');
    s.recordSelection('ns/q', at(2), 'x', null);
    const h = s.selectionHistory('ns/p', 10);
    assert.deepEqual(
      h.map((x) => [x.candidate, x.error]),
      [
        [null, 'empty tag list'],
        ['1.2.0', null],
      ],
    );
  });

  test('runs and decisions', () => {
    const s = openStore(':memory:');
    const run = s.beginRun(at(0), 'run');
    const d = {
      automation: 'ns/auto',
      file: 'a.yaml',
      line: 3,
      setter: 'ns:p',
      policy: 'ns/p',
      current: '1.0',
      candidate: '1.1',
      reason: 'upgrade',
      detail: '',
      action: 'write' as const,
    };
    s.recordDecision(run, d);
    s.recordDecision(run, {
      ...d,
      policy: 'ns/q',
      action: 'keep',
      reason: 'downgrade-blocked',
      candidate: null,
    });
    s.finishRun(run, { result: 'pushed', commit: 'abc' }, at(1));
    assert.deepEqual(s.getRun(run)!.result, { result: 'pushed', commit: 'abc' });
    assert.equal(s.getRun(run)!.kind, 'run');
    const onlyP = s.decisions({ policy: 'ns/p' });
    assert.equal(onlyP.length, 1);
    assert.equal(onlyP[0]!.reason, 'upgrade');
    assert.equal(onlyP[0]!.runKind, 'run');
    assert.equal(s.decisions({ runId: run }).length, 2);
    assert.equal(s.decisions({ runId: run + 1 }).length, 0);
    assert.equal(s.decisions({ limit: 1 })[0]!.policy, 'ns/q');
  });

  test('events filter by kind, policy, repository and time', () => {
    const s = openStore(':memory:');
    s.recordEvent({
      at: at(0),
      kind: 'downgrade-blocked',
      policy: 'ns/p',
      detail: { current: '2', candidate: '1' },
    });
    s.recordEvent({ at: at(5), kind: 'stale-scan', policy: 'ns/p', repository: 'ns/r', detail: {} });
    s.recordEvent({ at: at(9), kind: 'pin', policy: 'ns/q', detail: { line: 4 } });
    assert.equal(s.events().length, 3);
    assert.deepEqual(
      s.events({ policy: 'ns/p' }).map((e) => e.kind),
      ['stale-scan', 'downgrade-blocked'],
    );
    assert.deepEqual(
      s.events({ repository: 'ns/r' }).map((e) => e.kind),
      ['stale-scan'],
    );
    assert.deepEqual(
      s.events({ since: at(5) }).map((e) => e.kind),
      ['pin', 'stale-scan'],
    );
    assert.deepEqual(s.events({ kind: 'downgrade-blocked' })[0]!.detail, { current: '2', candidate: '1' });
  });
});

test('deleting the state directory is safe: a new store starts empty', (t) => {
  const dir = tempDir(t);
  const s = openStore(dir);
  scan(s, 'ns/app', ['1'], 0);
  s.close();
  rmSync(dir, { recursive: true, force: true });
  const again = openStore(dir);
  assert.equal(again.lastScan('ns/app'), null);
  assert.deepEqual(again.currentTags('ns/app'), []);
  again.close();
  assert.ok(readFileSync(join(dir, 'pawl.db')).length > 0);
});

test('a scan left running by a crashed process is marked interrupted by the next scan, hours later', () => {
  const s = openStore(':memory:');
  const stuck = s.beginScan('ns/app', 'example.com/app', at(0));
  s.beginScan('ns/app', 'example.com/app', at(30)); // another process may still be on it
  assert.equal(s.getScan(stuck)!.outcome, 'running');
  s.beginScan('ns/app', 'example.com/app', at(7 * 60));
  assert.equal(s.getScan(stuck)!.outcome, 'failed');
  assert.match(s.getScan(stuck)!.error!, /interrupted/);
});

test('two handles on one state directory (pawl serve and a CLI) both read and write', (t) => {
  const dir = tempDir(t);
  const a = openStore(dir);
  const b = openStore(dir);
  scan(a, 'ns/app', ['1'], 0);
  assert.deepEqual(b.currentTags('ns/app'), ['1']);
  scan(b, 'ns/app', ['1', '2'], 1);
  assert.deepEqual(a.currentTags('ns/app'), ['1', '2']);
  a.close();
  b.close();
});

test('raw-response bounds from the environment', () => {
  assert.deepEqual(storeOptionsFromEnv({ PAWL_RAW_SCANS_KEPT: '2', PAWL_RAW_BYTES_PER_SCAN: '65536' }), {
    rawScansKept: 2,
    rawBytesPerScan: 65536,
  });
  assert.deepEqual(storeOptionsFromEnv({}), {});
  assert.throws(
    () => storeOptionsFromEnv({ PAWL_RAW_SCANS_KEPT: 'five' }),
    /PAWL_RAW_SCANS_KEPT must be a whole number/,
  );
  const s = openStore(':memory:', storeOptionsFromEnv({ PAWL_RAW_SCANS_KEPT: '0' }));
  const id = s.beginScan('ns/app', 'x', at(0));
  s.finishScan(
    id,
    { outcome: 'ok', tags: ['a'], requests: 1, responses: [response(0)], endedAt: at(0) },
    diffTags,
  );
  assert.deepEqual(s.rawResponses('ns/app'), []);
});
