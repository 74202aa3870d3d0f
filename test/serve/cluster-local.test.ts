/**
 * The LocalCoordinator (one `pawl serve` on its own): one claim per key at a time, work that
 * wakes this process and coalesces, an ack refused when more arrived meanwhile, and an old
 * lease's late release leaving its successor alone. No database, no waiting.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { LocalCoordinator } from '../../src/serve/cluster/index.js';

describe('LocalCoordinator (one process)', () => {
  test('grants every claim once at a time, and wakes this process for its work', async () => {
    const c = new LocalCoordinator();
    const woken: string[] = [];
    c.onWork((k) => woken.push(k));
    const lease = await c.claim('k');
    assert.ok(lease);
    assert.equal(await c.claim('k'), null, 'the same key twice at once');
    assert.ok(c.owns('any'));
    await c.publish([{ key: 'k', repositories: ['ns/a'], tags: ['ns/a:1.1.0'], firstAt: 1, events: 1 }]);
    await c.publish([{ key: 'k', repositories: ['ns/b'], tags: ['ns/b:2.0.0'], firstAt: 2, events: 1 }]);
    assert.deepEqual(woken, ['k', 'k']);
    const work = (await c.take(lease))!;
    assert.deepEqual(
      [work.repositories, work.tags, work.events, work.firstAt],
      [['ns/a', 'ns/b'], ['ns/a:1.1.0', 'ns/b:2.0.0'], 2, 1],
    );
    await c.publish([{ key: 'k', repositories: ['ns/c'], tags: [], firstAt: 3, events: 1 }]);
    assert.equal(await c.ack(lease, work), false, 'an event arrived meanwhile: it stays queued');
    const rest = (await c.take(lease))!;
    assert.equal(rest.events, 1, 'without the two events already done');
    assert.equal(await c.ack(lease, rest), true);
    assert.equal(await c.take(lease), null);
    await c.release(lease);
    const next = await c.claim('k');
    assert.ok(next);
    // The old lease, released again (a late finally), does not free the key its successor holds.
    await c.release(lease);
    assert.equal(await c.renew(lease), false);
    assert.equal(await c.claim('k'), null);
    assert.ok(await c.renew(next));
  });
});
