/**
 * Slots (src/util/pool.ts): at most `size` calls in flight, the others started in arrival order
 * as slots free, and a call that fails (by rejecting or by throwing) frees its slot and fails
 * only its own caller.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Slots } from '../../src/util/index.js';
import { settle } from '../helpers/clock.js';

/** A call that runs until its own `end`. */
function gated(log: string[], name: string) {
  let end!: (fail?: Error) => void;
  const fn = () => {
    log.push(`start ${name}`);
    return new Promise<string>((resolve, reject) => {
      end = (fail) => (fail ? reject(fail) : resolve(name));
    });
  };
  return { fn, end: (fail?: Error) => end(fail) };
}

test('two slots: two calls run, the rest (and a late one) start in arrival order as each ends', async () => {
  const slots = new Slots(2);
  const log: string[] = [];
  const calls = ['a', 'b', 'c', 'd', 'e'].map((n) => gated(log, n));
  const results = calls.map((c) => slots.run(c.fn));
  await settle();
  assert.deepEqual(log, ['start a', 'start b']);
  calls[1]!.end();
  assert.equal(await results[1], 'b');
  await settle();
  assert.deepEqual(log, ['start a', 'start b', 'start c']);
  // The slot b freed went to c: a call arriving now waits behind d and e.
  const late = gated(log, 'late');
  const lateResult = slots.run(late.fn);
  await settle();
  assert.deepEqual(log, ['start a', 'start b', 'start c']);
  calls[0]!.end();
  calls[2]!.end();
  await settle();
  assert.deepEqual(log, ['start a', 'start b', 'start c', 'start d', 'start e']);
  calls[3]!.end();
  await settle();
  assert.equal(log.at(-1), 'start late');
  calls[4]!.end();
  late.end();
  assert.deepEqual(await Promise.all([...results, lateResult]), ['a', 'b', 'c', 'd', 'e', 'late']);
});

test('a call that rejects or throws frees its slot and fails only its caller', async () => {
  const slots = new Slots(1);
  const log: string[] = [];
  const first = gated(log, 'first');
  const after = gated(log, 'after');
  const running = slots.run(first.fn);
  const thrown = slots.run(() => {
    log.push('start thrower');
    throw new Error('thrown at once');
  });
  const last = slots.run(after.fn);
  await settle();
  assert.deepEqual(log, ['start first'], 'one slot: the others wait');
  first.end(new Error('rejected'));
  await assert.rejects(running, /rejected/);
  await assert.rejects(thrown, /thrown at once/);
  await settle();
  assert.deepEqual(log, ['start first', 'start thrower', 'start after']);
  after.end();
  assert.equal(await last, 'after');
  // Every slot is free again: a new call starts at once.
  const again = gated(log, 'again');
  const done = slots.run(again.fn);
  assert.equal(log.at(-1), 'start again');
  again.end();
  assert.equal(await done, 'again');
});

test('10,000 calls through 16 slots: never more than 16 in flight, each run once', async () => {
  const slots = new Slots(16);
  let inFlight = 0;
  let most = 0;
  let runs = 0;
  await Promise.all(
    Array.from({ length: 10_000 }, (_, i) =>
      slots.run(async () => {
        inFlight++;
        runs++;
        most = Math.max(most, inFlight);
        if (i % 7 === 0) await settle();
        inFlight--;
      }),
    ),
  );
  assert.equal(runs, 10_000);
  assert.equal(most, 16);
});
