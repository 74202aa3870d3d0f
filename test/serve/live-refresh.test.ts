/**
 * The dashboard's live refresh (web/live-refresh.ts) under load: renders slower than the refresh
 * interval, with events every second, must still each be shown, one at a time.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LiveRefresh } from '../../web/live-refresh.js';
import { FakeClock } from '../helpers/clock.js';

function world(renderMs: number) {
  const clock = new FakeClock();
  let running = 0;
  let most = 0;
  let finished = 0;
  const render = () =>
    new Promise<void>((resolve) => {
      running++;
      most = Math.max(most, running);
      clock.setTimeout(() => {
        running--;
        finished++;
        resolve();
      }, renderMs);
    });
  const live = new LiveRefresh(render, clock);
  return { clock, live, stats: () => ({ most, finished }) };
}

test('renders slower than the interval: each refresh waits for the render before it, none is overtaken', async () => {
  const { clock, live, stats } = world(1_500);
  void live.run(() => new Promise<void>((r) => clock.setTimeout(r, 1_500)));
  for (let s = 0; s < 20; s++) {
    live.request(1_000);
    await clock.advance(1_000);
  }
  await clock.advance(5_000);
  const { most, finished } = stats();
  assert.equal(most, 1, 'never two renders at once');
  // 25 s of 1.5 s renders, each started within a second of the one before it ending.
  assert.ok(finished >= 10, `${finished} refreshes finished`);
});

test('events that come together make one refresh, not one each', async () => {
  const { clock, live, stats } = world(10);
  for (let i = 0; i < 50; i++) live.request(1_000);
  await clock.advance(2_000);
  assert.equal(stats().finished, 1);
  // And at most one per interval while events keep coming.
  for (let i = 0; i < 40; i++) {
    live.request(1_000);
    await clock.advance(100);
  }
  await clock.advance(2_000);
  assert.ok(stats().finished <= 1 + 5, `${stats().finished} refreshes in 4 s`);
});

test('a failed render does not stop later refreshes', async () => {
  const clock = new FakeClock();
  let calls = 0;
  const live = new LiveRefresh(async () => {
    calls++;
    if (calls === 1) throw new Error('the admin API is restarting');
  }, clock);
  live.request(1_000);
  await clock.advance(1_000);
  live.request(1_000);
  await clock.advance(2_000);
  assert.equal(calls, 2);
});
