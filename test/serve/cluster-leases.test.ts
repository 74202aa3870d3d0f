/**
 * The PostgreSQL coordinator's lease edges, deterministically: every replica here has a clock
 * that never moves (FakeClock), so it beats once at start and never again, and a lease's or a
 * heartbeat's end is made by moving its `expires_at` into the past in the table — the database's
 * clock is the one that decides (postgres-leases.ts), so nothing here waits for time to pass.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { connectPostgresCoordinator, PostgresCoordinator } from '../../src/serve/cluster/postgres.js';
import type { Lease } from '../../src/serve/cluster/index.js';
import { silentLogger } from '../../src/util/log.js';
import { FakeClock } from '../helpers/clock.js';
import { postgresUnavailable, startPostgres, type TestPostgres } from '../helpers/postgres.js';

// Long enough that nothing runs out by itself while a test runs, on any host.
const TTL = 10 * 60_000;
const HEARTBEAT = 60_000;

const unavailable = postgresUnavailable();

test('the heartbeat runs at least three times per lease lifetime, whatever is asked', async () => {
  // Nothing connects until the first query: the pool is made, never used.
  const c = connectPostgresCoordinator(
    { connectionString: 'postgres://nobody@127.0.0.1:9/none' },
    { log: silentLogger, replicaId: 'r', leaseTtlMs: 3000, heartbeatMs: 10_000, clock: new FakeClock() },
  );
  try {
    assert.equal(c.heartbeatMs, 1000);
    assert.equal(c.leaseTtlMs, 3000);
  } finally {
    await c.close();
  }
});

describe('PostgreSQL leases at their edges', { skip: unavailable ?? false }, () => {
  let server: TestPostgres;
  let dbs = 0;
  const open: PostgresCoordinator[] = [];
  const clients: pg.Client[] = [];

  before(async () => {
    server = await startPostgres();
  });
  after(async () => {
    for (const c of open) await c.close().catch(() => undefined);
    for (const c of clients) await c.end().catch(() => undefined);
    await server?.close();
  });

  async function world(ids: string[]): Promise<{ cs: PostgresCoordinator[]; sql: pg.Client }> {
    const url = await server.createDatabase(`leases_${++dbs}`);
    const cs = ids.map((id) => {
      const c = connectPostgresCoordinator(
        { connectionString: url },
        { log: silentLogger, replicaId: id, leaseTtlMs: TTL, heartbeatMs: HEARTBEAT, clock: new FakeClock() },
      );
      open.push(c);
      return c;
    });
    for (const c of cs) await c.start();
    const sql = new pg.Client({ connectionString: url });
    await sql.connect();
    clients.push(sql);
    return { cs, sql };
  }

  const expireLease = (sql: pg.Client, key: string) =>
    sql.query(
      `UPDATE pawl_cluster_leases SET expires_at = clock_timestamp() - interval '1 second' WHERE key = $1`,
      [key],
    );
  const holderOf = async (sql: pg.Client, key: string): Promise<string | null> =>
    (await sql.query<{ holder: string }>('SELECT holder FROM pawl_cluster_leases WHERE key = $1', [key]))
      .rows[0]?.holder ?? null;

  test("a lease asked for longer than its holder's heartbeat ends with the heartbeat", async () => {
    const {
      cs: [a],
      sql,
    } = await world(['r-a']);
    assert.ok(await a!.claim('k', 100 * TTL));
    const { rows } = await sql.query<{ lease: Date; replica: Date }>(
      `SELECT l.expires_at AS lease, r.expires_at AS replica
         FROM pawl_cluster_leases l JOIN pawl_cluster_replicas r ON r.id = l.holder WHERE l.key = 'k'`,
    );
    assert.equal(rows.length, 1);
    assert.ok(rows[0]!.lease.getTime() <= rows[0]!.replica.getTime(), JSON.stringify(rows[0]));
  });

  test('a replica whose heartbeat has run out beats again before it claims, and loses the leases it held', async () => {
    const {
      cs: [a],
      sql,
    } = await world(['r-a']);
    const held = (await a!.claim('held'))!;
    // The heartbeat and (with it) the lease run out, as after a process stalled under load.
    await sql.query(
      `UPDATE pawl_cluster_replicas SET expires_at = clock_timestamp() - interval '1 second' WHERE id = 'r-a'`,
    );
    await expireLease(sql, 'held');
    // Refused as if another replica held it, the run would wait for its next interval with no
    // one else to run it: the claim is granted once this replica is live again.
    const lease = await a!.claim('k');
    assert.ok(lease, 'claimed after a new heartbeat');
    assert.equal(await holderOf(sql, 'k'), 'r-a');
    assert.ok(held.signal.aborted, 'the lease that ran out with the heartbeat is lost');
    assert.equal(a!.holds('held'), false);
  });

  test('a live lease is refused to another replica; once run out it is taken over, with a larger token', async () => {
    const {
      cs: [a, b],
      sql,
    } = await world(['r-a', 'r-b']);
    const first = (await a!.claim('k'))!;
    assert.ok(first);
    assert.equal(await b!.claim('k'), null);
    assert.equal(await holderOf(sql, 'k'), 'r-a');
    await expireLease(sql, 'k');
    const next = await b!.claim('k');
    assert.ok(next, 'the run-out lease is taken over');
    assert.ok(BigInt(next.token) > BigInt(first.token));
    assert.equal(await holderOf(sql, 'k'), 'r-b');
  });

  test("a late release by the old holder leaves the new holder's lease", async () => {
    const {
      cs: [a, b],
      sql,
    } = await world(['r-a', 'r-b']);
    const old = (await a!.claim('k'))!;
    await expireLease(sql, 'k');
    assert.ok(await b!.claim('k'));
    await a!.release(old);
    assert.equal(await holderOf(sql, 'k'), 'r-b');
  });

  test('a release frees the key at once for another replica', async () => {
    const {
      cs: [a, b],
      sql,
    } = await world(['r-a', 'r-b']);
    const lease = (await a!.claim('k'))!;
    assert.equal(await b!.claim('k'), null);
    await a!.release(lease);
    assert.equal(await holderOf(sql, 'k'), null, 'the row is gone');
    assert.ok(await b!.claim('k'), 'claimed without waiting for the lease to run out');
  });

  async function queued(c: PostgresCoordinator, key: string, lease: Lease) {
    await c.publish([{ key, repositories: ['apps/one'], tags: ['apps/one:1.1.0'], firstAt: 1, events: 1 }]);
    return (await c.take(lease))!;
  }

  test('an acknowledgement after the lease ran out is refused: the work stays for the new holder', async () => {
    const {
      cs: [a, b],
      sql,
    } = await world(['r-a', 'r-b']);
    const lease = (await a!.claim('k'))!;
    const work = await queued(a!, 'k', lease);
    await expireLease(sql, 'k');
    assert.equal(await a!.ack(lease, work), false);
    const theirs = (await b!.claim('k'))!;
    assert.ok(theirs);
    assert.deepEqual((await b!.take(theirs))?.repositories, ['apps/one']);
  });

  test('an event during the pass: the ack refuses, the row stays without the events done', async () => {
    const {
      cs: [a, b],
    } = await world(['r-a', 'r-b']);
    const lease = (await a!.claim('k'))!;
    const work = await queued(a!, 'k', lease);
    await b!.publish([{ key: 'k', repositories: ['apps/two'], tags: [], firstAt: 2, events: 1 }]);
    assert.equal(await a!.ack(lease, work), false, 'more arrived meanwhile');
    const rest = (await a!.take(lease))!;
    assert.deepEqual([rest.repositories, rest.events], [['apps/one', 'apps/two'], 1]);
    assert.equal(await a!.ack(lease, rest), true);
    assert.equal(await a!.take(lease), null);
  });

  test("another replica cannot acknowledge work under the holder's lease", async () => {
    const {
      cs: [a, b],
    } = await world(['r-a', 'r-b']);
    const lease = (await a!.claim('k'))!;
    const work = await queued(a!, 'k', lease);
    assert.equal(await b!.ack(lease, work), false);
    assert.ok(await a!.take(lease), 'the work is still queued');
    assert.equal(await a!.ack(lease, work), true);
    assert.equal(await a!.take(lease), null);
  });

  test('a lease the database cannot confirm is given up one heartbeat before it could be handed on', async () => {
    const url = await server.createDatabase(`leases_${++dbs}`);
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    let down = false;
    const refused = () => Promise.reject(new Error('connection refused (the test took the database away)'));
    // The database "goes away" for this replica alone: every query fails while `down`.
    const flaky = new Proxy(pool, {
      get(target, prop, receiver) {
        if (prop === 'query' || prop === 'connect') {
          const real = (Reflect.get(target, prop, receiver) as (...a: unknown[]) => unknown).bind(target);
          return (...args: unknown[]) => (down ? refused() : real(...args));
        }
        return Reflect.get(target, prop, receiver) as unknown;
      },
    });
    // A clock the test sets; its timers never fire, so every heartbeat here is one the test asks for.
    let now = 0;
    const clock = { now: () => now, setTimeout: () => 0, clearTimeout: () => undefined };
    const c = new PostgresCoordinator({
      pool: flaky,
      listen: async () => {
        const client = new pg.Client({ connectionString: url });
        client.on('error', () => undefined);
        await client.connect();
        return client;
      },
      log: silentLogger,
      replicaId: 'r-flaky',
      leaseTtlMs: 30_000,
      heartbeatMs: 10_000,
      clock,
      ownsPool: true,
    });
    open.push(c);
    await c.start();
    const lease = (await c.claim('k'))!;
    assert.ok(lease, 'claimed while the database answers');
    down = true;
    now = 19_999;
    assert.equal(
      await c.renew(lease),
      true,
      'kept: the database could not hand it on before the next heartbeat',
    );
    assert.equal(c.healthy, false, 'the failed heartbeat is seen');
    assert.equal(lease.signal.aborted, false);
    now = 20_000;
    assert.equal(
      await c.renew(lease),
      false,
      'given up: by the next heartbeat the database could hand it on',
    );
    assert.equal(lease.signal.aborted, true, 'the pass holding it is stopped');
    assert.deepEqual(c.claims(), []);
    down = false;
  });
});
