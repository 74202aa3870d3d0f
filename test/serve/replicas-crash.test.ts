/**
 * Issue 22 on PostgreSQL: three replicas, a webhook answered 202 by one of them, then `kill -9`
 * of all three within 100 ms — before the pass it queued could finish — and three new ones on
 * the same database. The queue is a table written before the answer: every automation's marker
 * reaches the new tag, round after round. Replica 0 is never started, so the registry's own
 * notifications (sent to its port) go nowhere and cannot stand in for the accepted webhook.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pushTags } from '../helpers/push.js';
import { postgresUnavailable } from '../helpers/postgres.js';
import { eventually, type ServeProcess } from '../helpers/serve.js';
import { startReplicaWorld, type ReplicaWorld } from './replicas-world.js';
import { postEvent } from './fixtures.js';

const AUTOMATIONS = 3;
const ROUNDS = 10;
/** A killed replica's leases run out with its heartbeat: short, so that each round takes seconds. */
const FAST = ['--lease-ttl', '3s', '--heartbeat', '1s'];
const REPLICAS = [1, 2, 3];

describe(
  'kill -9 of every replica right after a webhook is accepted (PostgreSQL)',
  {
    skip: postgresUnavailable() ?? false,
  },
  () => {
    let w: ReplicaWorld | undefined;
    let replicas: ServeProcess[] = [];
    after(async () => {
      await Promise.all(replicas.map((r) => r.stop('SIGKILL')));
      await w?.close();
    });

    const startAll = async () => (replicas = await Promise.all(REPLICAS.map((i) => w!.start(i, FAST))));
    const tags = () => Promise.all(Array.from({ length: AUTOMATIONS }, (_, i) => w!.tagOf(i)));

    test(`the new replicas push the tag to every automation, ${ROUNDS} rounds out of ${ROUNDS}`, async () => {
      w = await startReplicaWorld(AUTOMATIONS);
      await pushTags(w.registry.url, 'team/app', ['1.0.0']);
      await startAll();
      let unfinished = 0;
      for (let round = 1; round <= ROUNDS; round++) {
        const tag = `1.${round}.0`;
        await pushTags(w.registry.url, 'team/app', [tag]);
        const to = replicas[round % replicas.length]!;
        const status = await postEvent(to.hookUrl(w.hook.path), tag, w.hook.token);
        assert.equal(status, 202, `round ${round}: accepted`);
        await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 100)));
        for (const r of replicas) r.child.kill('SIGKILL');
        await Promise.all(replicas.map((r) => r.exited));
        // Killed before every pass had pushed: the restart has work left (else the round proves little).
        if (!(await tags()).every((t) => t === tag)) unfinished++;

        await startAll();
        await eventually(
          async () => ((await tags()).every((t) => t === tag) ? true : undefined),
          `round ${round}: ${tag} in every automation after the restart`,
          60_000,
        );
      }
      assert.ok(unfinished > 0, 'some round killed the replicas before their passes pushed');
    });
  },
);
