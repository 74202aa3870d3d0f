/**
 * Three `pawl serve` replicas on one real PostgreSQL, end to end (issue 16): 24 automations
 * updated exactly once per new tag with the work spread over the replicas; a replica killed with
 * SIGKILL in the middle of its passes, its automations finished by the others; the database
 * stopped and started, the replicas pausing and recovering while the guard still keeps a
 * person's newer tag. Every wait is for a condition, never a duration.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pushTags } from '../helpers/push.js';
import { postgresUnavailable } from '../helpers/postgres.js';
import { eventually, type ServeProcess } from '../helpers/serve.js';
import { preferredOwner } from '../../src/serve/cluster/index.js';
import { automationJob } from '../../src/serve/index.js';
import { startReplicaWorld, type ReplicaWorld } from './replicas-world.js';

/**
 * Sizes, and what each proves: 24 automations give each of the three replicas about eight, so
 * "every one updated exactly once" is checked across replicas that share work, and the victim of
 * the kill -9 test is still in the middle of its passes when it is seen holding leases; more
 * prove nothing more and cost minutes on a loaded host. The replicas' ids are fixed, so which
 * replica owns which automation (rendezvous hashing) is the same every run and checked below
 * rather than left to chance. LONG is a bound for a loaded host, not an expectation.
 */
const AUTOMATIONS = 24;
const LONG = 240_000;
const IDS = ['replica-a', 'replica-b', 'replica-c'] as const;

interface ReplicasView {
  self: string;
  healthy: boolean;
  replicas: { id: string; live: boolean }[];
  claims: { job: string }[];
}

describe('three pawl serve replicas on PostgreSQL', { skip: postgresUnavailable() ?? false }, () => {
  let w: ReplicaWorld;
  const replicas: (ServeProcess | null)[] = [null, null, null];
  const live = () => replicas.filter((r): r is ServeProcess => r !== null);

  /** An admin GET that, when the replica has died, says so with the end of its output. */
  async function admin<T = unknown>(r: ServeProcess, path: string): Promise<{ status: number; json: T }> {
    try {
      return await r.adminGet<T>(path);
    } catch (err) {
      if (r.child.exitCode !== null || r.child.signalCode !== null)
        throw new Error(
          `a replica exited (${r.child.exitCode ?? r.child.signalCode}):\n${r.output().slice(-6000)}`,
        );
      throw err;
    }
  }

  /** How many commits each automation's repository has. */
  const counts = async () =>
    Promise.all(Array.from({ length: AUTOMATIONS }, async (_, i) => (await w.commits(i)).length));

  /** The tags of every automation's marker on the remote. */
  const tags = async () => Promise.all(Array.from({ length: AUTOMATIONS }, (_, i) => w.tagOf(i)));

  /** Every replica idle and nothing queued: all the work a tag caused is done. */
  async function quiet(): Promise<void> {
    await eventually(
      async () => {
        const queued = await w.query<{ n: number }>('SELECT count(*)::int AS n FROM pawl_cluster_work');
        if (queued[0]!.n > 0) return undefined;
        for (const r of live()) {
          const v = await admin<ReplicasView>(r, '/api/v1/replicas');
          if (v.json.claims.length > 0) return undefined;
        }
        return true;
      },
      'no queued work and no claims',
      LONG,
    );
  }

  /**
   * For a failure's message: the automations not at `tag`, the queued work and leases, and what
   * each replica (the killed one included) logged about them.
   */
  async function lagging(tag: string, ...gone: ServeProcess[]): Promise<string> {
    const now = await tags();
    const behind = now.flatMap((t, i) => (t === tag ? [] : [`${w.repo(i)} at ${t}`]));
    const names = new Set(now.flatMap((t, i) => (t === tag ? [] : [w.repo(i)])));
    const work = await w.query('SELECT key, events, version, updated_at FROM pawl_cluster_work');
    const leases = await w.query('SELECT key, holder, expires_at FROM pawl_cluster_leases');
    const logs = [...live(), ...gone].map((r, n) => {
      const about = r
        .records()
        .filter((x) => [...names].some((name) => JSON.stringify(x).includes(name)))
        .slice(-40)
        .map((x) => JSON.stringify(x));
      return `replica ${n}${gone.includes(r) ? ' (killed)' : ''}:\n  ${about.join('\n  ')}`;
    });
    return [
      `behind: ${behind.join(', ')}`,
      `work: ${JSON.stringify(work)}`,
      `leases: ${JSON.stringify(leases)}`,
      ...logs,
    ].join('\n');
  }

  /** `pass` log lines that pushed, per replica. */
  const pushedBy = () =>
    live().map((r) => r.records().filter((x) => x.msg === 'pass' && x.result === 'pushed').length);

  before(async () => {
    w = await startReplicaWorld(AUTOMATIONS);
    // Every replica owns some automations: the spread asserted below follows from the ids.
    const owners = Array.from({ length: AUTOMATIONS }, (_, i) =>
      preferredOwner(automationJob(`flux-system/${w.repo(i)}`), IDS),
    );
    for (const id of IDS) assert.ok(owners.includes(id), `${id} owns none of the automations`);
    await pushTags(w.registry.url, 'team/app', ['1.0.0']);
    for (let i = 0; i < 3; i++) replicas[i] = await w.start(i, ['--replica-id', IDS[i]!]);
    await eventually(
      async () => {
        for (const r of live()) {
          const v = await admin<ReplicasView>(r, '/api/v1/replicas');
          if (v.json.replicas.filter((x) => x.live).length !== 3) return undefined;
        }
        return true;
      },
      'each replica sees three',
      LONG,
    );
    await quiet();
  });
  after(async () => {
    await Promise.all(live().map((r) => r.stop('SIGKILL')));
    await w?.close();
  });

  test('24 automations: every one updated exactly once per new tag, the work spread over the three', async () => {
    for (const tag of ['1.1.0', '1.2.0']) {
      const before = await counts();
      await pushTags(w.registry.url, 'team/app', [tag]);
      await eventually(
        async () => ((await tags()).every((t) => t === tag) ? true : undefined),
        `all at ${tag}`,
        LONG,
      );
      await quiet();
      const now = await counts();
      for (let i = 0; i < AUTOMATIONS; i++)
        assert.equal(now[i], before[i]! + 1, `${w.repo(i)}: one commit per tag, no more`);
    }
    // The registry notified replica 0 only: the others got their work through the database.
    const pushed = pushedBy();
    assert.equal(
      pushed.reduce((a, b) => a + b, 0),
      2 * AUTOMATIONS,
    );
    assert.ok(pushed[1]! > 0 && pushed[2]! > 0, `passes that pushed, per replica: ${pushed.join(', ')}`);
    const metrics = await replicas[1]!.metrics();
    assert.match(metrics, /pawl_replica_live\{replica="[^"]+"\} 1/);
    assert.match(metrics, /pawl_replica_heartbeat_age_seconds\{replica=/);
  });

  test('a webhook reaching a replica that does not own the automation lands through its owner', async () => {
    const r0 = replicas[0]!;
    const autos = (await r0.adminGet<{ name: string; job: { owner: boolean } }[]>('/api/v1/automations'))
      .json;
    const foreign = autos.filter((a) => !a.job.owner).map((a) => a.name);
    assert.ok(foreign.length > 0, 'replica 0 does not own every automation');
    // Their passes ran on their owners, though every webhook reached replica 0 (a busy owner's
    // work may be taken by another replica after a while, so not every one need be).
    const pushedElsewhere = new Set(
      replicas
        .slice(1)
        .flatMap((r) => r!.records())
        .filter((x) => x.msg === 'pass' && x.result === 'pushed')
        .map((x) => String(x.automation)),
    );
    assert.ok(
      foreign.some((a) => pushedElsewhere.has(a)),
      'some automation replica 0 does not own was pushed by another replica',
    );
    for (let i = 0; i < AUTOMATIONS; i++) assert.equal(await w.tagOf(i), '1.2.0');
    const status = await r0.adminGet<{ replica: { coordinator: string; live: number } }>('/api/v1/status');
    assert.deepEqual(status.json.replica.coordinator, 'postgres');
    assert.equal(status.json.replica.live, 3);
  });

  test('kill -9 of a replica in the middle of its passes: the others finish its automations, nothing doubled', async () => {
    const victim = replicas[2]!;
    const before = await counts();
    await pushTags(w.registry.url, 'team/app', ['1.3.0']);
    // Killed while it holds leases: passes of its own are under way.
    await eventually(
      async () =>
        (await admin<ReplicasView>(victim, '/api/v1/replicas')).json.claims.length > 0 ? true : undefined,
      'the victim running passes',
      LONG,
    );
    await victim.stop('SIGKILL');
    replicas[2] = null;
    await eventually(
      async () => ((await tags()).every((t) => t === '1.3.0') ? true : undefined),
      'all at 1.3.0',
      LONG,
    ).catch(async (err: Error) => {
      throw new Error(`${err.message}\n${await lagging('1.3.0', victim)}`);
    });
    await quiet();
    const now = await counts();
    for (let i = 0; i < AUTOMATIONS; i++)
      assert.equal(now[i], before[i]! + 1, `${w.repo(i)}: exactly one commit for 1.3.0`);
    const view = (await admin<ReplicasView>(replicas[0]!, '/api/v1/replicas')).json;
    assert.equal(view.replicas.filter((r) => r.live).length, 2);
    // It comes back (a new process, a new replica id) and takes its share again.
    replicas[2] = await w.start(2, ['--replica-id', `${IDS[2]}-again`]);
    await eventually(
      async () =>
        (await admin<ReplicasView>(replicas[0]!, '/api/v1/replicas')).json.replicas.filter((r) => r.live)
          .length === 3
          ? true
          : undefined,
      'three live again',
      LONG,
    );
  });

  test("the database stops and returns: the replicas pause, then recover; a person's newer tag is kept", async () => {
    const person = Math.min(7, AUTOMATIONS - 1);
    const before = await counts();
    await w.pg.stop();
    try {
      await eventually(
        async () => {
          for (const r of live()) if ((await admin(r, '/readyz')).status !== 503) return undefined;
          return true;
        },
        'every replica not ready',
        LONG,
      );
      // Meanwhile a person pins a newer tag by hand, and the registry gets a tag older than it:
      // its notification is refused (503) and retried by the registry.
      await w.git.commitFiles(
        w.repo(person),
        'main',
        {
          'app.yaml': (await w.git.show(w.repo(person), 'main', 'app.yaml')).replace(
            /team\/app:[^\s]+/,
            'team/app:1.9.0',
          ),
        },
        { message: 'pin 1.9.0 by hand' },
      );
      await pushTags(w.registry.url, 'team/app', ['1.4.0']);
      const refused = await replicas[0]!.metrics();
      assert.match(refused, /pawl_replica_database_up 0/);
    } finally {
      await w.pg.start();
    }
    await eventually(
      async () => {
        for (const r of live()) if ((await admin(r, '/readyz')).status !== 200) return undefined;
        return true;
      },
      'every replica ready again',
      LONG,
    );
    await eventually(
      async () => {
        const t = await tags();
        return t.every((x, i) => (i === person ? x === '1.9.0' : x === '1.4.0')) ? true : undefined;
      },
      'all at 1.4.0 but the pinned one',
      LONG,
    );
    await quiet();
    const now = await counts();
    for (let i = 0; i < AUTOMATIONS; i++)
      assert.equal(
        now[i],
        before[i]! + 1,
        `${w.repo(i)}: one commit for 1.4.0 (or the person's), nothing doubled`,
      );
    assert.equal(
      (await w.commits(person))[0]!.subject,
      'pin 1.9.0 by hand',
      "the person's commit is the last",
    );
    assert.equal(await w.tagOf(person), '1.9.0');
  });

  test('a stale tag list (the newest tag gone from the registry): no replica moves a marker back', async () => {
    const person = Math.min(7, AUTOMATIONS - 1);
    const before = await counts();
    const was = await tags();
    assert.ok(was.every((t, i) => t === (i === person ? '1.9.0' : '1.4.0')));
    // The registry forgets 1.4.0 (as a registry serving a cached list after an outage, SPEC §1
    // story 2), and a push of 1.3.5 makes every automation rescan and run.
    await rm(join(w.registry.storageDir, 'docker/registry/v2/repositories/team/app/_manifests/tags/1.4.0'), {
      recursive: true,
    });
    const pushedAt = Date.now();
    await pushTags(w.registry.url, 'team/app', ['1.3.5']);
    await eventually(
      async () => {
        const ran = new Set(
          live()
            .flatMap((r) => r.records())
            .filter((x) => x.msg === 'pass' && Number(x.time) >= pushedAt)
            .map((x) => String(x.automation)),
        );
        return ran.size === AUTOMATIONS ? true : undefined;
      },
      'every automation ran after the push',
      LONG,
    );
    await quiet();
    assert.deepEqual(await tags(), was, 'every marker kept');
    assert.deepEqual(await counts(), before, 'no commit anywhere');
  });
});
