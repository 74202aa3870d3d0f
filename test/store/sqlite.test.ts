import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import {
  openSqliteStore,
  storeOptionsFromEnv,
  SCHEMA_VERSION,
  STALE_RUNNING_SCAN_MS,
  type Store,
} from '../../src/store/index.js';
import { diffTags } from '../../src/scan/index.js';
import { SQL } from '../../src/store/sqlite/sql.js';
import { WriteGroups } from '../../src/store/sqlite/group.js';
import { bytesWritten } from '../helpers/written.js';
import { MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import {
  at,
  checkLegacyHistory,
  checkLegacyHeads,
  checkUnchangedRescanWrites,
  legacyHistory,
  legacyHeads,
  response,
  scan,
  storeContract,
} from './contract.js';
import { checkCarriedSequence, checkCarriedWrites, legacyRuns, marker, reportOf } from './carried.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'pawl-store-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A store at schema `version` holding the rows `sql` inserts, opened (so upgraded) by this pawl. */
function upgraded(t: TestContext, version: number, sql: readonly string[]) {
  const dir = tempDir(t);
  const db = new Database(join(dir, 'pawl.db'));
  for (const step of MIGRATIONS.slice(0, version)) db.exec(step);
  db.pragma(`user_version = ${version}`);
  for (const statement of sql) db.exec(statement);
  db.close();
  const store = openSqliteStore(dir, {});
  t.after(() => store.close());
  return store;
}

/**
 * Every row inserted, updated or deleted in `tables` of the store in `dir`, by table, counted by
 * triggers on its file: `written(fn)` the rows `fn` touched, `resultBytes(run)` a run's stored
 * result's length. `flush` commits what the store holds back.
 */
function counting(t: TestContext, dir: string, tables: readonly string[], flush: () => Promise<void>) {
  const db = new Database(join(dir, 'pawl.db'));
  t.after(() => db.close());
  db.exec('CREATE TABLE written (tbl TEXT NOT NULL)');
  for (const tbl of tables)
    for (const op of ['INSERT', 'UPDATE', 'DELETE'])
      db.exec(
        `CREATE TRIGGER count_${tbl}_${op} AFTER ${op} ON ${tbl} BEGIN INSERT INTO written VALUES ('${tbl}'); END`,
      );
  const written = async (fn: () => Promise<unknown>) => {
    await flush();
    db.exec('DELETE FROM written');
    await fn();
    await flush();
    const rows = db.prepare('SELECT tbl, count(*) AS n FROM written GROUP BY tbl ORDER BY tbl').all();
    return Object.fromEntries((rows as { tbl: string; n: number }[]).map((r) => [r.tbl, r.n]));
  };
  const resultBytes = async (runId: number) => {
    await flush();
    return (db.prepare('SELECT length(result) AS n FROM runs WHERE id = ?').get(runId) as { n: number }).n;
  };
  return { written, resultBytes };
}

storeContract('SQLite', async (options) => openSqliteStore(':memory:', options ?? {}));

describe('SQLite: openSqliteStore', () => {
  test('creates the directory and the database, migrates from empty, reopens idempotently', async (t) => {
    const dir = join(tempDir(t), 'nested', 'state');
    const s1 = openSqliteStore(dir);
    assert.equal(await s1.schemaVersion(), SCHEMA_VERSION);
    assert.equal(s1.kind, 'sqlite');
    assert.equal(s1.location, join(dir, 'pawl.db'));
    await scan(s1, 'ns/app', ['1.0.0'], 0);
    await s1.close();
    assert.ok(readdirSync(dir).includes('pawl.db'));
    const s2 = openSqliteStore(dir);
    assert.equal(await s2.schemaVersion(), SCHEMA_VERSION);
    assert.deepEqual(await s2.currentTags('ns/app'), ['1.0.0']);
    const db = new Database(join(dir, 'pawl.db'), { readonly: true });
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
    db.close();
    await s2.close();
  });

  test("marking interrupted scans reads the running ones, not the repository's whole history", async (t) => {
    const dir = tempDir(t);
    await openSqliteStore(dir).close();
    const db = new Database(join(dir, 'pawl.db'), { readonly: true });
    const plan = db
      .prepare(`EXPLAIN QUERY PLAN ${SQL.interruptScans}`)
      .all('interrupted', 0)
      .map((r) => (r as { detail: string }).detail)
      .join('\n');
    db.close();
    assert.match(plan, /USING INDEX scans_running/);
  });

  test('no statement reads every scan or selection: each finds them by id, through the heads or the running ones', async (t) => {
    const dir = tempDir(t);
    await openSqliteStore(dir).close();
    const db = new Database(join(dir, 'pawl.db'), { readonly: true });
    t.after(() => db.close());
    const statements = Object.entries(SQL).filter(([, sql]) => /\b(scans|selections)\b/.test(sql));
    assert.ok(statements.length >= 10, `${statements.length} statements`);
    for (const [name, sql] of statements) {
      const st = db.prepare(`EXPLAIN QUERY PLAN ${sql}`);
      const named = [...sql.matchAll(/@(\w+)/g)].map((m) => m[1]!);
      const params =
        named.length > 0
          ? [Object.fromEntries(named.map((n) => [n, 1]))]
          : Array(st.source.split('?').length - 1).fill('[]');
      const plan = (st.all(...params) as { detail: string }[]).map((r) => r.detail);
      const full = plan.filter(
        (d) => /^SCAN (scans|selections|s)\b/.test(d) && !d.includes('INDEX scans_running'),
      );
      assert.deepEqual(full, [], `${name}: ${plan.join(' | ')}`);
    }
  });

  test("version 6 drops the tags_by_scan index; asking for a scan's tags still searches the primary key", async (t) => {
    const dir = tempDir(t);
    const store = openSqliteStore(dir);
    await scan(store, 'ns/app', ['1.0.0', '1.1.0'], 0);
    await scan(store, 'ns/app', ['1.1.0', '1.2.0'], 1);
    assert.deepEqual(await store.currentTags('ns/app'), ['1.1.0', '1.2.0']);
    await store.close();
    const db = new Database(join(dir, 'pawl.db'), { readonly: true });
    t.after(() => db.close());
    const indexes = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'tags'")
      .pluck()
      .all();
    assert.ok(!indexes.includes('tags_by_scan'), `indexes on tags: ${indexes.join(', ')}`);
    const plan = (sql: string) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all('r', 'i', 1, '[]') as { detail: string }[])
        .map((r) => r.detail)
        .join(' | ');
    for (const sql of [
      'SELECT tag FROM tags WHERE repository = ? AND image = ? AND last_scan_id = ? AND ? IS NOT NULL',
      'UPDATE tags SET last_seen = 1, last_scan_id = 2 WHERE repository = ? AND image = ? AND last_scan_id = ? AND tag NOT IN (SELECT value FROM json_each(?))',
    ])
      assert.match(plan(sql), /SEARCH tags USING PRIMARY KEY \(repository=\? AND image=\?\)/, sql);
  });

  test('version 8 upgrades a store with history in place: it reads as it did, and scans on', async (t) => {
    const store = upgraded(t, 7, legacyHistory());
    assert.equal(await store.schemaVersion(), SCHEMA_VERSION);
    await checkLegacyHistory(store);
  });

  test('version 9 upgrades a store with runs in place: they read as they did, and passes carry on', async (t) => {
    const store = upgraded(t, 8, legacyRuns().sql);
    assert.equal(await store.schemaVersion(), SCHEMA_VERSION);
    await checkCarriedSequence(store, true);
  });

  test('versions 10 and 11 find the newest scans and selections, and their history, of a store written before them', async (t) => {
    const store = upgraded(t, 9, legacyHeads());
    assert.equal(await store.schemaVersion(), SCHEMA_VERSION);
    await checkLegacyHeads(store);
  });

  test('the pages a pass of unchanged rescans and its selections writes do not grow with the history', async (t) => {
    const dir = tempDir(t);
    const store = openSqliteStore(dir, {});
    t.after(() => store.close());
    const db = new Database(join(dir, 'pawl.db'));
    t.after(() => db.close());
    const repositories = Array.from({ length: 50 }, (_, i) => `ns/app${i}`);
    // One pass, one group commit: nothing here waits for a timer, so nothing commits before flush.
    const pass = async (minute: number) => {
      for (const repo of repositories) await scan(store, repo, ['1.0.0', '1.1.0'], minute);
      const selections = repositories.map((policy) => ({
        policy,
        at: at(minute),
        candidate: '1.1.0',
        error: null,
      }));
      await store.write({ selections });
      await store.flush();
    };
    // The WAL's frames a pass appends, a page each (https://sqlite.org/pragma.html#pragma_wal_checkpoint).
    const frames = async (minute: number) => {
      db.pragma('wal_checkpoint(TRUNCATE)');
      await pass(minute);
      return (db.pragma('wal_checkpoint(PASSIVE)') as { log: number }[])[0]!.log;
    };
    await pass(0);
    const many = Array.from({ length: 500 }, (_, i) => `ns/policy${i}`);
    const selections = (minute: number) =>
      many.map((policy) => ({ policy, at: at(minute), candidate: '1', error: null }));
    await store.write({ selections: selections(0) });
    const young = await frames(1);
    for (let minute = 2; minute < 300; minute++) await pass(minute);
    const old = await frames(300);
    // With an index keyed by repository (or policy) and id, each one's new entry lands on a page
    // of its own once the history is longer than a page each: 50 more pages at least.
    assert.ok(old <= young + 5, `a pass wrote ${young} pages on a young store, ${old} after 300 passes`);
    // A statement with a trigger journals each page it touches for its own rollback, and 500 such
    // statements in a pass's transaction spilled ~6 MB of journal to a temporary file (a trigger
    // kept the selections' heads): 500 selections after the scans write little beyond the WAL.
    const before = bytesWritten();
    for (const repo of repositories) await scan(store, repo, ['1.0.0', '1.1.0'], 301);
    await store.write({ selections: selections(301) });
    await store.flush();
    assert.ok(
      bytesWritten() - before < 1e6,
      `a pass and 500 selections wrote ${bytesWritten() - before} bytes`,
    );
  });

  test('a rescan runs four statements of its own; stale scans and old raw responses are seen to once a group', async (t) => {
    const dir = tempDir(t);
    const repositories = Array.from({ length: 50 }, (_, i) => `ns/app${i}`);
    const kept = 2;
    // Statements run, by their text: each statement prepared from here on is counted.
    const counts = new Map<string, number>();
    const prepare = Database.prototype.prepare;
    t.after(() => (Database.prototype.prepare = prepare));
    Database.prototype.prepare = function (this: Database.Database, sql: string) {
      const st = prepare.call(this, sql);
      for (const method of ['run', 'get', 'all'] as const) {
        const f = st[method] as (...args: unknown[]) => unknown;
        Object.defineProperty(st, method, {
          value: (...args: unknown[]) => {
            counts.set(sql, (counts.get(sql) ?? 0) + 1);
            return f.apply(st, args);
          },
        });
      }
      return st;
    } as typeof prepare;
    const store = openSqliteStore(dir, { rawScansKept: kept });
    t.after(() => store.close());
    const pass = async (minute: number) => {
      for (const repo of repositories) {
        const id = await store.beginScan(repo, 'example.com/app', at(minute));
        await store.finishScan(
          id,
          { outcome: 'ok', tags: ['1.0.0'], requests: 1, responses: [response(minute)], endedAt: at(minute) },
          diffTags,
        );
      }
      await store.flush();
    };
    for (let minute = 0; minute <= kept; minute++) await pass(minute);
    counts.clear();
    await pass(kept + 1);
    const ran = (sql: string) => counts.get(sql) ?? 0;
    assert.equal(ran(SQL.beginScan), 50);
    assert.equal(ran(SQL.finishing), 50);
    assert.equal(ran(SQL.goodScan), 50);
    assert.equal(ran(SQL.putRaw), 50);
    // Once for the pass (one group), not once a scan.
    assert.equal(ran(SQL.interruptScans), 1);
    assert.equal(ran(SQL.pruneRaw), 1);
    // Nothing else a scan (the group's savepoints aside: two a scan, and its BEGIN and COMMIT).
    const own = [...counts].filter(([sql]) => !/^(SAVEPOINT|RELEASE|BEGIN|COMMIT)\b/.test(sql));
    assert.equal(
      own.reduce((n, [, k]) => n + k, 0),
      50 * 4 + 2,
      own.map(([sql, k]) => `${k} × ${sql.slice(0, 60)}`).join('\n'),
    );
    // Pruned all the same, as committed: the newest `kept` of each repository.
    const db = new Database(join(dir, 'pawl.db'), { readonly: true });
    t.after(() => db.close());
    const left = db
      .prepare('SELECT repository, count(*) AS n FROM raw_responses GROUP BY repository')
      .all() as { repository: string; n: number }[];
    assert.equal(left.length, 50);
    assert.ok(
      left.every((r) => r.n === kept),
      JSON.stringify(left.filter((r) => r.n !== kept)),
    );
  });

  test('beginScan marks the stale running scans of every repository, at most once a minute of its clock', async (t) => {
    const store = openSqliteStore(tempDir(t), {});
    t.after(() => store.close());
    const stuck = await store.beginScan('ns/stuck', 'example.com/stuck', at(0));
    const stuckScan = async () => (await store.scanHistory('ns/stuck'))[0]!;
    const outcome = async () => (await stuckScan()).outcome;
    const stale = STALE_RUNNING_SCAN_MS / 60_000;
    // Not stale yet: the sweep at this begin leaves it.
    await scan(store, 'ns/other', ['1'], stale - 0.5);
    assert.equal(await outcome(), 'running');
    // Stale now, but within a minute of the last sweep: left for the next.
    await scan(store, 'ns/other', ['1'], stale + 0.25);
    assert.equal(await outcome(), 'running');
    // The store keeps the latest scans it has read: the repository has none finished yet.
    assert.equal((await store.latestScans(['ns/stuck'])).get('ns/stuck')?.finished ?? null, null);
    // A minute on, a scan of another repository marks it.
    await scan(store, 'ns/other', ['1'], stale + 0.75);
    assert.equal(await outcome(), 'failed');
    assert.equal((await stuckScan()).id, stuck);
    assert.match((await stuckScan()).error!, /interrupted/);
    // And what it kept of that repository is read again.
    assert.equal((await store.latestScans(['ns/stuck'])).get('ns/stuck')?.finished?.id, stuck);
  });

  test('an unchanged rescan writes the scan row and its raw response, not a row per tag', async (t) => {
    const dir = tempDir(t);
    const store = openSqliteStore(dir, {});
    t.after(() => store.close());
    await store.flush();
    const { written } = counting(t, dir, ['scans', 'scan_heads', 'tags', 'raw_responses'], () =>
      store.flush(),
    );
    await checkUnchangedRescanWrites(store, written);
  });

  test('a pass writes the decisions that differ from its base, not a row per marker', async (t) => {
    const dir = tempDir(t);
    const store = openSqliteStore(dir, {});
    t.after(() => store.close());
    await store.flush();
    const { written, resultBytes } = counting(t, dir, ['runs', 'decisions'], () => store.flush());
    await checkCarriedWrites(store, written, resultBytes);
  });

  test('one-shot runs, each in a store opened anew, carry from the base in the store and read back alike', async (t) => {
    const dir = tempDir(t);
    const reopen = async (s: Store) => (await s.close(), openSqliteStore(dir, {}));
    const last = await checkCarriedSequence(openSqliteStore(dir, {}), false, reopen);
    await last.close();
  });

  test('a one-shot pass writes the decisions that differ from the store’s base, as a daemon’s pass does', async (t) => {
    const dir = tempDir(t);
    await openSqliteStore(dir, {}).close();
    // Each pass opens a store and closes the one before, as one-shot processes do.
    let current: Store | null = null;
    const reopen = async (s: Store | null) => (await s?.close(), (current = openSqliteStore(dir, {})));
    const { written, resultBytes } = counting(t, dir, ['runs', 'decisions'], async () => current?.flush());
    await (await checkCarriedWrites(await reopen(null), written, resultBytes, reopen)).close();
  });

  for (const [what, tamper] of [
    [
      'a decision row deleted',
      'DELETE FROM decisions WHERE id = (SELECT max(id) FROM decisions WHERE run_id = ?)',
    ],
    [
      'a result carried from no base',
      `UPDATE runs SET result = '{"repositories":{"$carried":true,"own":[],"excluded":[],"count":1}}' WHERE id = ?`,
    ],
  ] as const)
    test(`a one-shot run does not carry from a base changed by hand (${what}): it is written whole`, async (t) => {
      const dir = tempDir(t);
      const ds = Array.from({ length: 10 }, (_, i) => marker('flux-system/fleet', i));
      const pass = async (minute: number) => {
        const s = openSqliteStore(dir, {});
        const id = await s.beginRun(at(minute), 'run');
        await s.write({
          decisions: { runId: id, decisions: ds },
          finishRun: { runId: id, result: reportOf(ds), endedAt: at(minute) },
        });
        await s.close();
        return id;
      };
      const base = await pass(1);
      const db = new Database(join(dir, 'pawl.db'));
      t.after(() => db.close());
      db.prepare(tamper).run(base);
      const next = await pass(2);
      const row = db.prepare('SELECT decisions_base, decisions_count FROM runs WHERE id = ?').get(next);
      assert.deepEqual(row, { decisions_base: null, decisions_count: 10 });
      const s = openSqliteStore(dir, {});
      t.after(() => s.close());
      assert.equal((await s.decisions({ runId: next })).length, 10);
      assert.deepEqual((await s.getRun(next))!.result, reportOf(ds));
    });

  test('refuses a database from a newer pawl, saying it is safe to move away', async (t) => {
    const dir = tempDir(t);
    await openSqliteStore(dir).close();
    const db = new Database(join(dir, 'pawl.db'));
    db.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    db.close();
    assert.throws(() => openSqliteStore(dir), /newer than this pawl understands.*move the database away/);
  });

  test('a file that is not a database gives an error naming it', (t) => {
    const dir = tempDir(t);
    writeFileSync(
      join(dir, 'pawl.db'),
      'not a database at all, just some text that is long enough'.repeat(100),
    );
    assert.throws(
      () => openSqliteStore(dir),
      (err: Error) => err.message.includes('pawl.db') && /safe/.test(err.message),
    );
  });

  test('deleting the state directory is safe: a new store starts empty', async (t) => {
    const dir = tempDir(t);
    const s = openSqliteStore(dir);
    await scan(s, 'ns/app', ['1'], 0);
    await s.close();
    rmSync(dir, { recursive: true, force: true });
    const again = openSqliteStore(dir);
    assert.equal(await again.lastScan('ns/app'), null);
    assert.deepEqual(await again.currentTags('ns/app'), []);
    await again.close();
    assert.ok(readFileSync(join(dir, 'pawl.db')).length > 0);
  });

  test('two handles on one state directory (pawl serve and a CLI) both read and write', async (t) => {
    const dir = tempDir(t);
    const a = openSqliteStore(dir);
    const b = openSqliteStore(dir);
    await scan(a, 'ns/app', ['1'], 0);
    assert.deepEqual(await b.currentTags('ns/app'), ['1']);
    await scan(b, 'ns/app', ['1', '2'], 1);
    assert.deepEqual(await a.currentTags('ns/app'), ['1', '2']);
    await a.close();
    await b.close();
  });
});

describe('SQLite: writes are committed in groups', () => {
  const committed = (dir: string, sql: string): unknown => {
    const db = new Database(join(dir, 'pawl.db'), { readonly: true });
    try {
      return db.prepare(sql).pluck().get();
    } finally {
      db.close();
    }
  };

  test('another connection sees a group once flushed; this one at once', async (t) => {
    const dir = tempDir(t);
    const s = openSqliteStore(dir);
    const runId = await s.beginRun(at(0), 'run');
    await s.write({ events: [{ at: at(0), kind: 'stale-scan', policy: 'ns/p', detail: {} }] });
    assert.equal((await s.events()).length, 1, 'the writer reads its own group');
    assert.equal(committed(dir, 'SELECT count(*) FROM events'), 0, 'not committed yet');
    await s.flush();
    assert.equal(committed(dir, 'SELECT count(*) FROM events'), 1);
    assert.equal(committed(dir, 'SELECT count(*) FROM runs WHERE id = ' + String(runId)), 1);
    await s.close();
  });

  test('the group commits on its own shortly after the first write, and on close', async (t) => {
    const dir = tempDir(t);
    const s = openSqliteStore(dir);
    await s.write({ events: [{ at: at(0), kind: 'stale-scan', detail: {} }] });
    for (let i = 0; committed(dir, 'SELECT count(*) FROM events') === 0; i++) {
      assert.ok(i < 1000, 'the group was never committed');
      await new Promise((r) => setTimeout(r, 5));
    }
    await s.write({ events: [{ at: at(1), kind: 'stale-scan', detail: {} }] });
    await s.close();
    assert.equal(committed(dir, 'SELECT count(*) FROM events'), 2);
  });

  test("a group's housekeeping runs once, just before it commits; one that fails is undone alone", async (t) => {
    const db = new Database(':memory:');
    t.after(() => db.close());
    db.exec('CREATE TABLE t (v TEXT NOT NULL)');
    const groups = new WriteGroups(db, ':memory:');
    const count = () => (db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n;
    let ran = 0;
    groups.write(() => db.prepare("INSERT INTO t VALUES ('a')").run());
    groups.beforeCommit(() => {
      ran++;
      // Still inside the group: what it writes commits with it.
      assert.ok(db.inTransaction);
      db.prepare("INSERT INTO t VALUES ('kept')").run();
    });
    groups.beforeCommit(() => {
      db.prepare("INSERT INTO t VALUES ('undone')").run();
      db.prepare('INSERT INTO t VALUES (NULL)').run(); // NOT NULL: fails
    });
    groups.write(() => db.prepare("INSERT INTO t VALUES ('b')").run());
    assert.equal(ran, 0);
    groups.flush();
    assert.equal(ran, 1);
    assert.ok(!db.inTransaction);
    assert.deepEqual(db.prepare('SELECT v FROM t ORDER BY rowid').pluck().all(), ['a', 'b', 'kept']);
    // Once: the next group runs none of them.
    groups.write(() => db.prepare("INSERT INTO t VALUES ('c')").run());
    groups.flush();
    assert.equal(ran, 1);
    assert.equal(count(), 4);
  });

  test('a write that fails is undone alone: the rest of its group is kept', async (t) => {
    const dir = tempDir(t);
    const s = openSqliteStore(dir);
    await scan(s, 'ns/app', ['1.0.0'], 0);
    const id = await s.beginScan('ns/app', 'x', at(1));
    await s.finishScan(id, { outcome: 'failed', error: 'down', requests: 1, endedAt: at(1) }, diffTags);
    // Finishing a finished scan fails inside its transaction, after its first statement ran.
    await assert.rejects(
      s.finishScan(id, { outcome: 'ok', tags: ['2.0.0'], requests: 1, endedAt: at(2) }, diffTags),
      /already finished/,
    );
    await s.close();
    const again = openSqliteStore(dir);
    assert.deepEqual(await again.currentTags('ns/app'), ['1.0.0']);
    assert.equal((await again.lastScan('ns/app'))?.outcome, 'failed');
    await again.close();
  });

  test('a process that exits without closing the store still commits its last group', async (t) => {
    const dir = tempDir(t);
    const script = join(dir, 'exit.mts');
    writeFileSync(
      script,
      `import { openSqliteStore } from ${JSON.stringify(join(process.cwd(), 'src', 'store', 'index.js'))};\n` +
        `const s = openSqliteStore(${JSON.stringify(join(dir, 'state'))});\n` +
        `await s.write({ events: [{ at: new Date(0), kind: 'stale-scan', detail: { last: true } }] });\n` +
        `process.exit(0);\n`,
    );
    const r = spawnSync(process.execPath, ['--import', 'tsx', script], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(committed(join(dir, 'state'), 'SELECT count(*) FROM events'), 1);
  });
});

test('raw-response bounds from the environment', async () => {
  assert.deepEqual(storeOptionsFromEnv({ PAWL_RAW_SCANS_KEPT: '2', PAWL_RAW_BYTES_PER_SCAN: '65536' }), {
    rawScansKept: 2,
    rawBytesPerScan: 65536,
  });
  assert.deepEqual(storeOptionsFromEnv({}), {});
  assert.throws(
    () => storeOptionsFromEnv({ PAWL_RAW_SCANS_KEPT: 'five' }),
    /PAWL_RAW_SCANS_KEPT must be a whole number/,
  );
  const s = openSqliteStore(':memory:', storeOptionsFromEnv({ PAWL_RAW_SCANS_KEPT: '0' }));
  const id = await s.beginScan('ns/app', 'x', at(0));
  await s.finishScan(
    id,
    { outcome: 'ok', tags: ['a'], requests: 1, responses: [response(0)], endedAt: at(0) },
    diffTags,
  );
  assert.deepEqual(await s.rawResponses('ns/app'), []);
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

test('a list compared with itself (an unchanged rescan) diffs as an equal copy would', () => {
  for (const list of [[], ['1'], ['a', 'b', 'c']])
    assert.deepEqual(diffTags(list, list), diffTags([...list], list));
  assert.deepEqual(diffTags([], []).anomalies, [{ kind: 'empty' }]);
});

describe('SQLite: the latest scans kept between reads (src/store/latest.ts)', () => {
  test('the same frozen records while nothing changes; another connection’s scan and an interrupted start are seen', async (t) => {
    const dir = tempDir(t);
    const s = openSqliteStore(dir);
    const other = openSqliteStore(dir);
    t.after(async () => {
      await s.close();
      await other.close();
    });
    await scan(s, 'ns/a', ['1'], 0);
    const [once, twice] = [await s.latestScans(['ns/a']), await s.latestScans(['ns/a'])];
    const kept = once.get('ns/a')!.finished!;
    assert.equal(twice.get('ns/a')!.finished, kept, 'read once, then kept');
    assert.ok(Object.isFrozen(kept) && Object.isFrozen(kept.added));
    assert.throws(() => (kept.added as string[]).push('x'), TypeError);

    // Another process's scan of the same database (a `pawl scan` beside the daemon), committed.
    const elsewhere = await scan(other, 'ns/a', ['1', '2'], 1);
    await other.flush();
    assert.deepEqual((await s.latestScans(['ns/a'])).get('ns/a'), { finished: elsewhere, good: elsewhere });

    // A daemon's start marks the scans a dead process left running interrupted, all at once.
    const left = await s.beginScan('ns/a', 'example.com/app', at(2));
    assert.equal((await s.latestScans(['ns/a'])).get('ns/a')!.finished!.id, elsewhere.id);
    assert.deepEqual(await s.interruptRunningScans(), [left]);
    const latest = (await s.latestScans(['ns/a'])).get('ns/a')!;
    assert.equal(latest.finished!.id, left);
    assert.equal(latest.finished!.outcome, 'failed');
    assert.equal(latest.good!.id, elsewhere.id);
  });

  test("asked for 10,000 names in order, answers without a hash table of them in V8's large-object space", async (t) => {
    const s = openSqliteStore(tempDir(t));
    t.after(() => s.close());
    const names = Array.from({ length: 10_000 }, (_, i) => `ns/app-${String(i).padStart(5, '0')}`);
    const large = () =>
      getHeapSpaceStatistics()
        .filter((x) => x.space_name === 'large_object_space' || x.space_name === 'new_large_object_space')
        .reduce((sum, x) => sum + x.space_used_size, 0);
    await s.latestScans(names); // read once and kept
    const grows = async (asked: string[]) => {
      gc();
      const before = large();
      const latest = await s.latestScans(asked);
      const after = large();
      assert.deepEqual(latest.get(asked[0]!), { finished: null, good: null });
      return after - before;
    };
    const inOrder = await grows(names);
    const reversed = await grows([...names].reverse());
    // A Map of 10,000 is a table of ~0.45 MB; the names in order are answered by a table over them.
    assert.ok(reversed > 200_000, `out of order (a Map): ${reversed} bytes there`);
    assert.ok(inOrder < 64 * 1024, `in order: ${inOrder} bytes there`);
  });
});
