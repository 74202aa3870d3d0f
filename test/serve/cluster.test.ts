/**
 * The replicas' coordinator against a real PostgreSQL (test/helpers/postgres.ts): leases claimed
 * by exactly one replica, a dead replica's keys handed over when its heartbeat runs out, work
 * queued by one replica waking the one that owns it, and a database that goes away and returns.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import {
  gained,
  preferredOwner,
  type Coordinator,
  type MembershipChange,
  type WorkSource,
} from '../../src/serve/cluster/index.js';
import { connectPostgresCoordinator, PostgresCoordinator } from '../../src/serve/cluster/postgres.js';
import { silentLogger } from '../../src/util/log.js';
import { FakeClock } from '../helpers/clock.js';
import { postgresUnavailable, startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { eventually } from '../helpers/serve.js';

/**
 * Real time, for the tests that need a heartbeat to run out (the edges themselves are tested
 * without waiting in cluster-leases.test.ts). The heartbeat also bounds each statement and
 * connection (max(1 s, heartbeat)): 2 s leaves a loaded host room to connect, and a live
 * replica loses nothing unless a heartbeat is held up for 4 s.
 */
const TTL = 6000;
const HEARTBEAT = 2000;

describe('rendezvous hashing (pure)', () => {
  const replicas = ['a-1', 'b-2', 'c-3'];
  const keys = Array.from({ length: 500 }, (_, i) => `ImageUpdateAutomation/apps/app-${i}`);

  test('every key has one owner, the same on every replica, and the keys spread', () => {
    const counts = new Map<string, number>();
    for (const k of keys) {
      const owner = preferredOwner(k, replicas)!;
      assert.equal(
        preferredOwner(k, [...replicas].reverse()),
        owner,
        'the order of the list does not matter',
      );
      counts.set(owner, (counts.get(owner) ?? 0) + 1);
    }
    assert.deepEqual([...counts.keys()].sort(), replicas);
    for (const [r, n] of counts) assert.ok(n > 500 / 3 / 2, `${r} owns ${n} of 500: too few`);
    assert.equal(preferredOwner('x', []), null);
  });

  test('when a replica leaves, only its keys move', () => {
    const after = ['a-1', 'c-3'];
    for (const k of keys) {
      const was = preferredOwner(k, replicas);
      const now = preferredOwner(k, after);
      if (was !== 'b-2') assert.equal(now, was, `${k} moved though its owner stayed`);
    }
    const toA = gained(keys, 'a-1', replicas, after);
    const toC = gained(keys, 'c-3', replicas, after);
    const ofB = keys.filter((k) => preferredOwner(k, replicas) === 'b-2');
    assert.deepEqual([...toA, ...toC].sort(), [...ofB].sort());
  });
});

const unavailable = postgresUnavailable();

describe('PostgresCoordinator on a real PostgreSQL', { skip: unavailable ?? false }, () => {
  let server: TestPostgres;
  let dbs = 0;
  const open: Coordinator[] = [];

  before(async () => {
    server = await startPostgres();
  });
  after(async () => {
    for (const c of open) await c.close().catch(() => undefined);
    await server?.close();
  });

  async function freshDatabase(): Promise<string> {
    return server.createDatabase(`cluster_${++dbs}`);
  }

  function coordinator(url: string, id: string, extra: { clock?: FakeClock } = {}): PostgresCoordinator {
    const c = connectPostgresCoordinator(
      { connectionString: url },
      { log: silentLogger, replicaId: id, leaseTtlMs: TTL, heartbeatMs: HEARTBEAT, ...extra },
    );
    open.push(c);
    return c;
  }

  async function three(url: string): Promise<PostgresCoordinator[]> {
    const cs = ['r-a', 'r-b', 'r-c'].map((id) => coordinator(url, id));
    await Promise.all(cs.map((c) => c.start()));
    // Every replica sees all three before the test divides work between them.
    await eventually(
      async () => (cs.every((c) => c.replicas().filter((r) => r.live).length === 3) ? true : undefined),
      'three live replicas seen by each',
    );
    return cs;
  }

  test('three replicas migrate at once: the tables are made once, beside the others', async () => {
    const url = await freshDatabase();
    const cs = await three(url);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query<{ version: number }>(
        'SELECT version FROM pawl_cluster_schema ORDER BY version',
      );
      assert.deepEqual(
        rows.map((r) => r.version),
        [1, 2],
      );
      const tables = await client.query<{ tablename: string }>(
        `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`,
      );
      assert.ok(tables.rows.every((t) => t.tablename.startsWith('pawl_cluster_')));
    } finally {
      await client.end();
    }
    assert.deepEqual(
      cs[0]!
        .replicas()
        .map((r) => [r.id, r.live, r.self])
        .sort(),
      [
        ['r-a', true, true],
        ['r-b', true, false],
        ['r-c', true, false],
      ],
    );
  });

  test('each key is claimed by exactly one of three replicas claiming at once', async () => {
    const cs = await three(await freshDatabase());
    const keys = Array.from({ length: 40 }, (_, i) => `ImageUpdateAutomation/apps/app-${i}`);
    const results = await Promise.all(
      keys.flatMap((k) => cs.map(async (c) => ({ k, c: c.replicaId, lease: await c.claim(k) }))),
    );
    for (const k of keys) {
      const won = results.filter((r) => r.k === k && r.lease !== null);
      assert.equal(won.length, 1, `${k} granted to ${won.map((w) => w.c).join(', ') || 'nobody'}`);
    }
    assert.equal(
      cs.reduce((n, c) => n + c.claims().length, 0),
      keys.length,
    );
    // A held key is refused to the others until it is released; then one of them gets it.
    const first = results.find((r) => r.k === keys[0] && r.lease)!;
    const holder = cs.find((c) => c.replicaId === first.c)!;
    const other = cs.find((c) => c !== holder)!;
    assert.equal(await other.claim(keys[0]!), null);
    assert.ok(await holder.renew(first.lease!));
    await holder.release(first.lease!);
    const next = await other.claim(keys[0]!);
    assert.ok(next);
    assert.ok(BigInt(next.token) > BigInt(first.lease!.token), 'a later holder has a larger fencing token');
  });

  test('a replica that stops its heartbeat loses its leases within the TTL, and the others take its keys', async () => {
    const url = await freshDatabase();
    const [b, c] = ['r-b', 'r-c'].map((id) => coordinator(url, id));
    // r-a's clock never moves: after its first heartbeat it beats no more, like a frozen process.
    const frozen = new FakeClock();
    const a = coordinator(url, 'r-a', { clock: frozen });
    await Promise.all([a.start(), b!.start(), c!.start()]);
    const keys = Array.from({ length: 10 }, (_, i) => `ImageRepository/apps/repo-${i}`);
    const leases = await Promise.all(keys.map((k) => a.claim(k)));
    assert.ok(leases.every((l) => l !== null));
    assert.deepEqual(
      await Promise.all(keys.map((k) => b!.claim(k))),
      keys.map(() => null),
    );

    const left: MembershipChange[] = [];
    b!.onMembership((ch) => left.push(ch));
    const offered: [string, WorkSource][] = [];
    for (const x of [b!, c!]) x.onWork((k, source) => offered.push([k, source]));
    await eventually(async () => (left.some((ch) => ch.left.includes('r-a')) ? true : undefined), 'r-a left');
    // Seen as gone now, before r-a's late renew below touches the replica table again.
    assert.ok(!b!.replicas().find((r) => r.id === 'r-a')!.live);
    // The runs it was in the middle of are offered to their new owners at once.
    await eventually(
      async () => (offered.filter(([, s]) => s === 'takeover').length === keys.length ? true : undefined),
      'every interrupted run offered once',
    );
    assert.deepEqual(offered.map(([k]) => k).sort(), [...keys].sort());
    // Its heartbeat ran out, so did its leases: the survivors split its keys.
    const taken = await Promise.all(keys.map(async (k) => (await b!.claim(k)) ?? (await c!.claim(k))));
    assert.ok(taken.every((l) => l !== null));
    // r-a finds out at its next heartbeat: its leases are lost, their signals aborted.
    assert.equal(await a.renew(leases[0]!), false);
    assert.ok(leases.every((l) => l!.signal.aborted));
  });

  test('work queued by one replica wakes the replica that owns the key, coalesced, acknowledged once', async () => {
    const cs = await three(await freshDatabase());
    const [a, b, c] = cs as [PostgresCoordinator, PostgresCoordinator, PostgresCoordinator];
    const woken = new Map<string, { key: string; source: WorkSource }[]>();
    for (const x of cs)
      x.onWork((key, source) => woken.set(x.replicaId, [...(woken.get(x.replicaId) ?? []), { key, source }]));
    // A key that r-b owns, published by r-a.
    const key = Array.from({ length: 100 }, (_, i) => `ImageUpdateAutomation/apps/app-${i}`).find(
      (k) => b.owns(k) && !a.owns(k) && !c.owns(k),
    )!;
    assert.ok(key);
    await a.publish([
      { key, repositories: ['apps/one'], tags: ['apps/one:1.1.0'], firstAt: Date.now(), events: 1 },
    ]);
    await eventually(
      async () => (woken.get('r-b')?.some((w) => w.key === key) ? true : undefined),
      'r-b woken',
    );
    assert.equal(woken.get('r-b')![0]!.source, 'notify');
    await c.publish([
      {
        key,
        repositories: ['apps/two'],
        tags: ['apps/one:1.1.0', 'apps/two:2.0.0'],
        firstAt: Date.now(),
        events: 1,
      },
    ]);

    const lease = (await b.claim(key))!;
    const work = (await b.take(lease))!;
    assert.deepEqual(
      [work.repositories, work.tags, work.events],
      [['apps/one', 'apps/two'], ['apps/one:1.1.0', 'apps/two:2.0.0'], 2],
    );
    // Another event during the pass: the ack refuses, the row stays for one more pass.
    await a.publish([{ key, repositories: ['apps/three'], tags: [], firstAt: Date.now(), events: 1 }]);
    assert.equal(await b.ack(lease, work), false);
    const again = (await b.take(lease))!;
    assert.deepEqual([again.repositories, again.events], [['apps/one', 'apps/three', 'apps/two'], 1]);
    assert.equal(await b.ack(lease, again), true);
    assert.equal(await b.take(lease), null);
    await b.release(lease);
    // Neither r-a nor r-c owns it, so neither was woken by the notification.
    assert.ok(!(woken.get('r-a') ?? []).some((w) => w.key === key && w.source === 'notify'));
    assert.ok(!(woken.get('r-c') ?? []).some((w) => w.key === key && w.source === 'notify'));
  });

  test('work whose owner is gone is swept up by another replica', async () => {
    const url = await freshDatabase();
    const frozen = new FakeClock();
    const a = coordinator(url, 'r-a', { clock: frozen });
    const b = coordinator(url, 'r-b');
    await Promise.all([a.start(), b.start()]);
    await eventually(
      async () => (b.replicas().filter((r) => r.live).length === 2 ? true : undefined),
      'two live',
    );
    const key = Array.from({ length: 100 }, (_, i) => `k-${i}`).find((k) => a.owns(k) && !b.owns(k))!;
    const woken: string[] = [];
    b.onWork((k) => woken.push(k));
    await b.publish([{ key, repositories: [], tags: [], firstAt: Date.now(), events: 1 }]);
    // r-a never runs it (it is frozen); after a heartbeat of waiting r-b sweeps it up.
    await eventually(async () => (woken.includes(key) ? true : undefined), 'r-b offered the work');
    const lease = await b.claim(key);
    assert.ok(lease, 'r-a holds no lease on it, so r-b can run it');
  });

  test('the database stops: claims fail, unconfirmed leases are given up, and all recovers when it returns', async () => {
    const url = await freshDatabase();
    const a = coordinator(url, 'r-a');
    const b = coordinator(url, 'r-b');
    await Promise.all([a.start(), b.start()]);
    const held = (await a.claim('ImageUpdateAutomation/apps/held'))!;
    assert.ok(held);
    let recovered = 0;
    a.onRecovered(() => recovered++);

    await server.stop();
    try {
      await eventually(async () => (!a.healthy && !b.healthy ? true : undefined), 'both unhealthy');
      await assert.rejects(a.claim('ImageUpdateAutomation/apps/other'));
      await assert.rejects(
        a.publish([{ key: 'k', repositories: [], tags: [], firstAt: Date.now(), events: 1 }]),
      );
      // Not renewed for most of the TTL: given up here before the database could give it to another.
      await eventually(async () => (held.signal.aborted ? true : undefined), 'the held lease given up');
      assert.deepEqual(a.claims(), []);
    } finally {
      await server.start();
    }
    await eventually(async () => (a.healthy && b.healthy ? true : undefined), 'both healthy again', 60_000);
    assert.ok(recovered >= 1);
    const again = await b.claim('ImageUpdateAutomation/apps/held');
    assert.ok(again, 'the key is free again (the lease ran out with the outage)');
    // Work queued after the outage wakes its owner again: the LISTEN connection came back.
    const key = Array.from({ length: 100 }, (_, i) => `k-${i}`).find((k) => a.owns(k))!;
    const woken: string[] = [];
    a.onWork((k) => woken.push(k));
    await b.publish([{ key, repositories: [], tags: [], firstAt: Date.now(), events: 1 }]);
    await eventually(async () => (woken.includes(key) ? true : undefined), 'r-a woken after the outage');
  });
});
