/**
 * The PostgreSQL store against a real server on loopback (test/helpers/postgres.ts): the store
 * contract, migrations (from empty, re-run, refused when newer, several processes at once),
 * and what a caller sees when the server is unreachable, refuses the password, or goes away.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import {
  openPostgresStore,
  openStoreFrom,
  parseStoreSpec,
  migratePostgres,
  StoreUnavailableError,
  type PostgresStore,
  type Store,
} from '../../src/store/index.js';
import { PG_SCHEMA_VERSION } from '../../src/store/postgres/index.js';
import { PG_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { freePort } from '../helpers/registry.js';
import { postgresUnavailable, startPostgres, type TestPostgres } from '../helpers/postgres.js';
import {
  at,
  checkLegacyHistory,
  checkLegacyHeads,
  checkUnchangedRescanWrites,
  legacyHistory,
  legacyHeads,
  scan,
  storeContract,
} from './contract.js';
import { checkCarriedSequence, checkCarriedWrites, legacyRuns } from './carried.js';

const exec = promisify(execFile);
const unavailable = postgresUnavailable();
/** CI must run these: there, a missing PostgreSQL fails instead of skipping. */
const skip = process.env.CI === 'true' ? false : (unavailable ?? false);

let server: TestPostgres;
let schemas = 0;
const fresh = () => `t${process.pid}_${++schemas}`;

before(async () => {
  if (unavailable) {
    if (process.env.CI === 'true') throw new Error(`CI needs the PostgreSQL suite: ${unavailable}`);
    return;
  }
  server = await startPostgres();
});
after(async () => {
  await server?.close();
});

const open = (schema = fresh()) => openPostgresStore({ url: server.url, schema });

/**
 * Every row inserted, updated or deleted in `tables`, by table, counted by triggers:
 * `written(fn)` the rows `fn` touched; `resultBytes(run)` the length of a run's stored result.
 */
async function counting(store: PostgresStore, schema: string, tables: readonly string[]) {
  await store.pool.query(`
    CREATE TABLE ${schema}.written (tbl TEXT NOT NULL);
    CREATE FUNCTION ${schema}.count_written() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO ${schema}.written VALUES (TG_TABLE_NAME); RETURN NULL; END $$;
    ${tables
      .map(
        (t) => `CREATE TRIGGER count_${t} AFTER INSERT OR UPDATE OR DELETE ON ${schema}.${t}
      FOR EACH ROW EXECUTE FUNCTION ${schema}.count_written();`,
      )
      .join('\n')}`);
  const written = async (fn: () => Promise<unknown>) => {
    await store.pool.query(`DELETE FROM ${schema}.written`);
    await fn();
    const rows = await store.pool.query<{ tbl: string; n: number }>(
      `SELECT tbl, count(*)::int AS n FROM ${schema}.written GROUP BY tbl ORDER BY tbl`,
    );
    return Object.fromEntries(rows.rows.map((r) => [r.tbl, r.n]));
  };
  const resultBytes = async (runId: number) =>
    (
      await store.pool.query<{ n: number }>(
        `SELECT length(result)::int AS n FROM ${schema}.runs WHERE id = $1`,
        [runId],
      )
    ).rows[0]!.n;
  return { written, resultBytes };
}

describe('PostgreSQL store', { skip }, () => {
  storeContract('PostgreSQL', async (options) =>
    openPostgresStore({ url: server.url, schema: fresh(), ...options }),
  );

  describe('migrations', () => {
    test('from empty to the current version, once; re-opening applies nothing', async () => {
      const schema = fresh();
      const a = await open(schema);
      assert.equal(await a.schemaVersion(), PG_SCHEMA_VERSION);
      await scan(a, 'ns/app', ['1'], 0);
      await a.close();
      const b = await open(schema);
      assert.equal(await b.schemaVersion(), PG_SCHEMA_VERSION);
      assert.deepEqual(await b.currentTags('ns/app'), ['1']);
      const rows = await b.pool.query<{ version: number }>(`SELECT version FROM ${schema}.store_migrations`);
      assert.deepEqual(
        rows.rows.map((r) => r.version),
        Array.from({ length: PG_SCHEMA_VERSION }, (_, i) => i + 1),
      );
      await b.close();
    });

    test('a schema from a newer pawl is refused, with what to do, and left alone', async () => {
      const schema = fresh();
      const a = await open(schema);
      await a.pool.query(`INSERT INTO ${schema}.store_migrations (version) VALUES ($1)`, [
        PG_SCHEMA_VERSION + 1,
      ]);
      await a.close();
      await assert.rejects(open(schema), (err: Error) => {
        assert.match(err.message, /newer than this pawl understands/);
        assert.match(err.message, /upgrade pawl/);
        assert.ok(err.message.includes(server.urlWithoutPassword), err.message);
        assert.ok(!err.message.includes(server.password));
        return true;
      });
    });

    test('several processes starting at once migrate once, one after the other', async () => {
      const schema = fresh();
      // Hold the migration lock so every process is waiting on it before any can migrate.
      const holder = new pg.Client({ connectionString: server.url });
      await holder.connect();
      const key = `pawl:${schema}.store_migrations`;
      await holder.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [key]);
      const script = fileURLToPath(new URL('./fixtures/open-postgres.ts', import.meta.url));
      const procs = [1, 2, 3].map(() =>
        exec(process.execPath, ['--import', 'tsx', script, schema], {
          env: { ...process.env, PAWL_STORE: server.url },
        }),
      );
      try {
        for (let i = 0; ; i++) {
          const waiting = await holder.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
          );
          if (waiting.rows[0]!.n >= 3) break;
          if (i > 600) assert.fail('the processes never reached the migration lock');
          await new Promise((r) => setTimeout(r, 100));
        }
        const before = await holder.query(
          'SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2',
          [schema, 'scans'],
        );
        assert.equal(before.rowCount, 0, 'nothing migrated while the lock was held');
      } finally {
        await holder.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [key]);
      }
      const outs = await Promise.all(procs);
      assert.deepEqual(
        outs.map((o) => o.stdout.trim()),
        [1, 2, 3].map(() => String(PG_SCHEMA_VERSION)),
      );
      const rows = await holder.query(`SELECT version FROM ${schema}.store_migrations`);
      assert.equal(rows.rowCount, PG_SCHEMA_VERSION);
      await holder.end();
    });

    test('version 6 upgrades a store with history in place: it reads as it did, and scans on', async () => {
      const schema = fresh();
      const c = new pg.Client({ connectionString: server.url });
      await c.connect();
      try {
        const steps = PG_MIGRATIONS.slice(0, 5);
        await migratePostgres(c, {
          schema,
          table: 'store_migrations',
          steps,
          what: 'the store',
          location: 'test',
        });
        await c.query(`SET search_path TO ${schema}`);
        for (const sql of legacyHistory()) await c.query(sql);
        await c.query("SELECT setval(pg_get_serial_sequence('scans', 'id'), 4)");
      } finally {
        await c.end();
      }
      const store = await open(schema);
      try {
        assert.equal(await store.schemaVersion(), PG_SCHEMA_VERSION);
        await checkLegacyHistory(store);
      } finally {
        await store.close();
      }
    });

    test('version 7 upgrades a store with runs in place: they read as they did, and passes carry on', async () => {
      const schema = fresh();
      const c = new pg.Client({ connectionString: server.url });
      await c.connect();
      try {
        await migratePostgres(c, {
          schema,
          table: 'store_migrations',
          steps: PG_MIGRATIONS.slice(0, 6),
          what: 'the store',
          location: 'test',
        });
        await c.query(`SET search_path TO ${schema}`);
        for (const sql of legacyRuns().sql) await c.query(sql);
        await c.query("SELECT setval(pg_get_serial_sequence('runs', 'id'), 2)");
        await c.query("SELECT setval(pg_get_serial_sequence('decisions', 'id'), 5)");
      } finally {
        await c.end();
      }
      const store = await open(schema);
      try {
        assert.equal(await store.schemaVersion(), PG_SCHEMA_VERSION);
        await checkCarriedSequence(store, true);
      } finally {
        await store.close();
      }
    });

    test('versions 8 and 9 find the newest scans and selections, and their history, of a store written before them', async () => {
      const schema = fresh();
      const c = new pg.Client({ connectionString: server.url });
      await c.connect();
      try {
        const set = { schema, table: 'store_migrations', what: 'the store', location: 'test' };
        await migratePostgres(c, { ...set, steps: PG_MIGRATIONS.slice(0, 7) });
        await c.query(`SET search_path TO ${schema}`);
        for (const sql of legacyHeads()) await c.query(sql);
        await c.query("SELECT setval(pg_get_serial_sequence('scans', 'id'), 6)");
        await c.query("SELECT setval(pg_get_serial_sequence('selections', 'id'), 4)");
      } finally {
        await c.end();
      }
      const store = await open(schema);
      try {
        assert.equal(await store.schemaVersion(), PG_SCHEMA_VERSION);
        await checkLegacyHeads(store);
      } finally {
        await store.close();
      }
    });

    test("selections written at once by two replicas: the policy's history holds every one", async () => {
      const schema = fresh();
      const [a, b] = [await open(schema), await open(schema)];
      try {
        await Promise.all(
          Array.from({ length: 40 }, (_, i) =>
            (i % 2 ? a : b).write({
              selections: [
                { policy: 'ns/p', at: at(i), candidate: `${i}`, error: null },
                { policy: 'ns/p', at: at(i), candidate: `${i}b`, error: null },
              ],
            }),
          ),
        );
        const history = await a.selectionHistory('ns/p', 100);
        assert.equal(history.length, 80);
        assert.deepEqual(
          history.map((x) => x.candidate).sort(),
          Array.from({ length: 40 }, (_, i) => [`${i}`, `${i}b`])
            .flat()
            .sort(),
        );
        const newest = (await b.latestSelections(['ns/p'])).get('ns/p')!;
        assert.equal(newest.id, history.reduce((m, x) => (x.id > m.id ? x : m)).id);
      } finally {
        await a.close();
        await b.close();
      }
    });

    test('scans begun at once by two replicas: the history holds every one, in order', async () => {
      const schema = fresh();
      const [a, b] = [await open(schema), await open(schema)];
      try {
        const begun = await Promise.all(
          Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).beginScan('ns/app', 'example.com/app', at(i))),
        );
        const history = await a.scanHistory('ns/app', 100);
        assert.deepEqual(
          history.map((x) => x.id),
          [...begun].sort((x, y) => y - x),
        );
        assert.equal((await b.lastScan('ns/app'))!.id, Math.max(...begun));
      } finally {
        await a.close();
        await b.close();
      }
    });

    test('an unchanged rescan writes the scan row and its raw response, not a row per tag', async () => {
      const schema = fresh();
      const store = await open(schema);
      try {
        const { written } = await counting(store, schema, ['scans', 'tags', 'raw_responses', 'scan_heads']);
        await checkUnchangedRescanWrites(store, written);
      } finally {
        await store.close();
      }
    });

    test('a pass writes the decisions that differ from its base, not a row per marker', async () => {
      const schema = fresh();
      const store = await open(schema);
      try {
        const { written, resultBytes } = await counting(store, schema, ['runs', 'decisions']);
        await checkCarriedWrites(store, written, resultBytes);
      } finally {
        await store.close();
      }
    });

    test('one-shot runs, each in a store opened anew, carry from the base in the store and read back alike', async () => {
      const schema = fresh();
      const reopen = async (s: Store) => (await s.close(), open(schema));
      await (await checkCarriedSequence(await open(schema), false, reopen)).close();
    });

    test('a one-shot pass writes the decisions that differ from the store’s base, as a daemon’s pass does', async () => {
      const schema = fresh();
      const admin = await open(schema);
      try {
        const { written, resultBytes } = await counting(admin, schema, ['runs', 'decisions']);
        const reopen = async (s: Store) => (await s.close(), open(schema));
        await (await checkCarriedWrites(await open(schema), written, resultBytes, reopen)).close();
      } finally {
        await admin.close();
      }
    });

    test('another component keeps its own versioned tables beside the store', async () => {
      const schema = fresh();
      const store = await open(schema);
      const c = await store.pool.connect();
      try {
        const set = {
          schema,
          table: 'replica_migrations',
          steps: ['CREATE TABLE replica_leases (name TEXT PRIMARY KEY)'],
          what: 'replica coordination',
          location: store.location,
        };
        assert.equal(await migratePostgres(c, set), 1);
        assert.equal(await migratePostgres(c, set), 1);
        await c.query(`INSERT INTO ${schema}.replica_leases VALUES ('x')`);
      } finally {
        c.release();
      }
      assert.equal(await store.schemaVersion(), PG_SCHEMA_VERSION);
      await store.close();
      const again = await open(schema);
      assert.equal(await again.schemaVersion(), PG_SCHEMA_VERSION);
      await again.close();
    });
  });

  describe('failures name the server, never the password', () => {
    test('nothing listening: StoreUnavailableError naming the host and database', async () => {
      const port = await freePort();
      const url = `postgres://pawl:${server.password}@127.0.0.1:${port}/pawldb`;
      await assert.rejects(openPostgresStore({ url, connectTimeoutMs: 3000 }), (err: unknown) => {
        assert.ok(err instanceof StoreUnavailableError, String(err));
        assert.equal(err.reason, 'unreachable');
        assert.match(err.message, new RegExp(`127\\.0\\.0\\.1:${port}, database pawldb`));
        assert.ok(!err.message.includes(server.password));
        assert.ok(!err.location.includes(server.password));
        return true;
      });
    });

    test('a wrong password: refused, naming the host and database', async () => {
      const wrong = 'wrong-' + server.password;
      const spec = parseStoreSpec(server.urlWithoutPassword, '--store');
      await assert.rejects(openStoreFrom(spec, { password: wrong }), (err: unknown) => {
        assert.ok(err instanceof StoreUnavailableError, String(err));
        assert.equal(err.reason, 'refused');
        assert.match(err.message, /password authentication failed/);
        assert.ok(err.message.includes(`${server.host}:${server.port}, database pawl`), err.message);
        assert.ok(!err.message.includes(wrong));
        return true;
      });
    });

    test('the server goes away and comes back: calls fail as unavailable, then work again', async () => {
      const store: PostgresStore = await open();
      await scan(store, 'ns/app', ['1'], 0);
      await server.stop();
      try {
        await assert.rejects(store.lastScan('ns/app'), (err: unknown) => {
          assert.ok(err instanceof StoreUnavailableError, String(err));
          assert.ok(!err.message.includes(server.password));
          return true;
        });
        await assert.rejects(
          store.write({ events: [{ at: new Date(), kind: 'pin', detail: {} }] }),
          StoreUnavailableError,
        );
      } finally {
        await server.start();
      }
      assert.deepEqual(await store.currentTags('ns/app'), ['1']);
      assert.deepEqual(await store.events(), [], 'the failed write left nothing');
      await store.close();
    });
  });
});
