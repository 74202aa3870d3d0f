/** The daemon's pass at a commit batch's end: on the manual clock, never before, once, replaced, dropped when stopping. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BatchWakes } from '../../src/serve/jobs/index.js';
import { FakeClock } from '../helpers/clock.js';

const at = (clock: FakeClock, ms: number): string => new Date(clock.now() + ms).toISOString();

test('a pass is asked for at the batch end, not a millisecond before, once', async () => {
  const clock = new FakeClock();
  await clock.advance(1_000_000);
  const woken: string[] = [];
  const wakes = new BatchWakes(clock, (a) => woken.push(a));
  wakes.at('ns/a', at(clock, 600_000));
  await clock.advance(599_999);
  assert.deepEqual(woken, []);
  await clock.advance(1);
  assert.deepEqual(woken, ['ns/a']);
  await clock.advance(10 * 600_000);
  assert.deepEqual(woken, ['ns/a'], 'once');
  assert.equal(clock.pending(), 0);
});

test('each pass replaces the wake; undefined clears it; a due time passed wakes at once', async () => {
  const clock = new FakeClock();
  await clock.advance(1_000_000);
  const woken: string[] = [];
  const wakes = new BatchWakes(clock, (a) => woken.push(a));
  wakes.at('ns/a', at(clock, 600_000));
  wakes.at('ns/a', at(clock, 300_000));
  wakes.at('ns/b', at(clock, 100_000));
  assert.equal(clock.pending(), 2, 'one timer per automation');
  wakes.at('ns/b', undefined);
  await clock.advance(300_000);
  assert.deepEqual(woken, ['ns/a']);
  wakes.at('ns/c', at(clock, -5_000));
  await clock.advance(0);
  assert.deepEqual(woken, ['ns/a', 'ns/c']);
});

test('stopping drops every wake and takes none', async () => {
  const clock = new FakeClock();
  const woken: string[] = [];
  const wakes = new BatchWakes(clock, (a) => woken.push(a));
  wakes.at('ns/a', at(clock, 1_000));
  wakes.close();
  assert.equal(clock.pending(), 0);
  wakes.at('ns/b', at(clock, 1_000));
  await clock.advance(10_000);
  assert.deepEqual(woken, []);
});
