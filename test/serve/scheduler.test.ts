/**
 * The scheduler core without real time: intervals with jitter, suspend, at most one run per
 * job, coalescing, backoff, timeouts, reconfiguration and stopping.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { Scheduler, type JobSpec, type RunContext } from '../../src/serve/index.js';
import { followingRuns, type Gate } from '../../src/serve/scheduler.js';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { FakeClock, settle } from '../helpers/clock.js';

// A real collection before each heap reading, so garbage is not mistaken for what is kept.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

interface Probe {
  starts: number[];
  running: number;
  maxRunning: number;
  release: (() => void)[];
  fail: boolean;
  /** Runs wait for release() when true. */
  hold: boolean;
}

function job(clock: FakeClock, key: string, probe: Probe, over: Partial<JobSpec> = {}): JobSpec {
  return {
    key,
    interval: 60_000,
    timeout: 30_000,
    suspended: false,
    fingerprint: 'v1',
    firstDelay: () => 0,
    async run(_ctx: RunContext) {
      probe.starts.push(clock.now());
      probe.running++;
      probe.maxRunning = Math.max(probe.maxRunning, probe.running);
      try {
        if (probe.hold) await new Promise<void>((r) => probe.release.push(r));
        if (probe.fail) throw new Error('registry down');
      } finally {
        probe.running--;
      }
    },
    ...over,
  };
}

const probe = (): Probe => ({ starts: [], running: 0, maxRunning: 0, release: [], fail: false, hold: false });

describe('scheduler', () => {
  test('runs each job on its interval, jittered within ±5%', async () => {
    const clock = new FakeClock();
    let r = 0;
    const randoms = [0, 1, 0.5];
    const s = new Scheduler({ clock, random: () => randoms[r++ % randoms.length]! });
    const p = probe();
    s.set([job(clock, 'a', p)]);
    await clock.advance(0);
    assert.deepEqual(p.starts, [0]);
    // random 0 → interval × 0.95
    await clock.advance(57_000 - 1);
    assert.equal(p.starts.length, 1);
    await clock.advance(1);
    assert.deepEqual(p.starts, [0, 57_000]);
    // random 1 → × 1.05
    await clock.advance(63_000);
    assert.deepEqual(p.starts, [0, 57_000, 120_000]);
  });

  test('a suspended job never runs, and a request for it does nothing', async () => {
    const clock = new FakeClock();
    const s = new Scheduler({ clock });
    const p = probe();
    s.set([job(clock, 'a', p, { suspended: true })]);
    assert.equal(await s.request('a'), null);
    await clock.advance(10 * 60_000);
    assert.equal(p.starts.length, 0);
  });

  test('requests during a run: exactly one follow-up, never two runs at once', async () => {
    const clock = new FakeClock();
    const s = new Scheduler({ clock });
    const p = probe();
    p.hold = true;
    s.set([job(clock, 'a', p)]);
    await clock.advance(0);
    assert.equal(p.starts.length, 1);
    const waits = Array.from({ length: 50 }, () => s.request('a'));
    await settle();
    assert.equal(s.status('a')!.queued, true);
    p.release.shift()!();
    await settle();
    assert.equal(p.starts.length, 2, 'one follow-up for 50 requests');
    p.release.shift()!();
    const results = await Promise.all(waits);
    assert.ok(results.every((x) => x !== null && x.trigger === 'request'));
    assert.equal(p.maxRunning, 1);
    assert.equal(p.starts.length, 2);
  });

  test('a failing run is retried with exponential backoff, capped; success resets it', async () => {
    const clock = new FakeClock();
    const s = new Scheduler({ clock, backoffBase: 1000, backoffMax: 8000, jitter: 0 });
    const p = probe();
    p.fail = true;
    s.set([job(clock, 'a', p)]);
    await clock.advance(0);
    await clock.advance(1000 + 2000 + 4000 + 8000 + 8000);
    assert.deepEqual(p.starts, [0, 1000, 3000, 7000, 15000, 23000]);
    const st = s.status('a')!;
    assert.equal(st.failures, 6);
    assert.equal(st.lastError, 'registry down');
    p.fail = false;
    await clock.advance(8000);
    assert.equal(s.status('a')!.failures, 0);
    assert.equal(s.status('a')!.lastError, null);
    assert.equal(s.status('a')!.nextAt, 31_000 + 60_000);
  });

  test('after stop, no timer starts a run: scheduled runs and retries are dropped', async () => {
    const clock = new FakeClock();
    const s = new Scheduler({ clock, jitter: 0 });
    const ok = probe();
    const failing = probe();
    failing.fail = true;
    s.set([job(clock, 'ok', ok), job(clock, 'failing', failing)]);
    await clock.advance(0);
    assert.deepEqual([ok.starts, failing.starts], [[0], [0]]);
    s.stop();
    await clock.advance(10 * 60_000);
    assert.deepEqual([ok.starts, failing.starts], [[0], [0]]);
    assert.equal(s.status('ok')!.nextAt, null);
  });

  test('a retry never waits longer than the interval: a job on a 3 s interval retries every 3 s', async () => {
    const clock = new FakeClock();
    const s = new Scheduler({ clock, backoffBase: 1000, backoffMax: 60_000, jitter: 0 });
    const p = probe();
    p.fail = true;
    s.set([job(clock, 'a', p, { interval: 3000 })]);
    await clock.advance(0);
    await clock.advance(1000 + 2000 + 3000 + 3000);
    assert.deepEqual(p.starts, [0, 1000, 3000, 6000, 9000]);
    assert.equal(s.backoff(10, 3000), 3000);
    assert.equal(s.backoff(10, 10 * 60_000), 60_000, 'and never longer than backoffMax');
  });

  test('first runs are spread over startSpread, or over the interval when that is shorter', async () => {
    const clock = new FakeClock();
    // random just below 1: the latest start the spread allows.
    const s = new Scheduler({ clock, random: () => 0.999, startSpread: 5000 });
    const short = probe();
    const long = probe();
    s.set([
      job(clock, 'short', short, { interval: 1000, firstDelay: undefined }),
      job(clock, 'long', long, { interval: 60_000, firstDelay: undefined }),
    ]);
    assert.equal(s.status('short')!.nextAt, 999);
    assert.equal(s.status('long')!.nextAt, 4995);
    await clock.advance(999);
    assert.deepEqual([short.starts, long.starts], [[999], []]);
  });

  test('a run past its timeout has its signal aborted and counts as failed', async () => {
    const clock = new FakeClock();
    const s = new Scheduler({ clock });
    let aborted = false;
    s.set([
      {
        key: 'slow',
        interval: 60_000,
        timeout: 5_000,
        suspended: false,
        fingerprint: '1',
        firstDelay: () => 0,
        run: ({ signal }) =>
          new Promise<void>((resolve) =>
            signal.addEventListener('abort', () => {
              aborted = true;
              resolve();
            }),
          ),
      },
    ]);
    await clock.advance(5_000);
    assert.equal(aborted, true);
    assert.match(s.status('slow')!.lastError ?? '', /timed out after 5s/);
  });

  test('a followed signal aborts the runs following it; a run that ends no longer follows it', async () => {
    const clock = new FakeClock();
    const s = new Scheduler({ clock });
    // One signal followed by every run, as the local coordinator's leases share one (issue 27).
    const shared = new AbortController();
    const p = probe();
    p.hold = true;
    const seen: AbortSignal[] = [];
    const spec = (key: string): JobSpec => ({
      ...job(clock, key, p),
      run: async (ctx) => {
        ctx.follow(shared.signal);
        seen.push(ctx.signal);
        await job(clock, key, p).run(ctx);
      },
    });
    s.set(Array.from({ length: 20 }, (_, i) => spec(`j${i}`)));
    await clock.advance(0);
    assert.equal(seen.length, 20);
    assert.equal(followingRuns(shared.signal), 20);
    assert.equal(
      getEventListeners(shared.signal, 'abort').length,
      1,
      'one listener, however many runs follow it',
    );
    p.release.splice(0, 10).forEach((r) => r());
    await settle();
    assert.equal(followingRuns(shared.signal), 10, 'ended runs no longer follow it');
    assert.equal(getEventListeners(shared.signal, 'abort').length, 1);
    shared.abort(new Error('the daemon is stopping'));
    assert.deepEqual(
      seen.map((sig) => sig.aborted),
      [...Array<boolean>(10).fill(false), ...Array<boolean>(10).fill(true)],
      'only the runs still going are aborted',
    );
    p.release.splice(0).forEach((r) => r());
    await settle();
  });

  test('set: added jobs start, removed ones stop, changed ones get a new schedule', async () => {
    const clock = new FakeClock();
    const s = new Scheduler({ clock, jitter: 0 });
    const a = probe();
    const b = probe();
    const c = probe();
    s.set([job(clock, 'a', a), job(clock, 'b', b)]);
    await clock.advance(0);
    const r = s.set([job(clock, 'b', b, { fingerprint: 'v2', interval: 10_000 }), job(clock, 'c', c)]);
    assert.deepEqual(r, { added: ['c'], removed: ['a'], changed: ['b'] });
    await clock.advance(0);
    assert.equal(b.starts.length, 2, 'the changed job runs again on its new schedule');
    assert.equal(c.starts.length, 1);
    await clock.advance(120_000);
    assert.equal(a.starts.length, 1, 'a removed job never runs again');
    assert.equal(b.starts.length, 2 + 12);
  });

  test('stop: no new runs, idle waits for the one in progress', async () => {
    const clock = new FakeClock();
    const s = new Scheduler({ clock });
    const p = probe();
    p.hold = true;
    s.set([job(clock, 'a', p)]);
    await clock.advance(0);
    const queued = s.request('a');
    s.stop();
    assert.equal(await queued, null);
    let idle = false;
    const done = s.idle().then(() => (idle = true));
    await settle();
    assert.equal(idle, false);
    p.release.shift()!();
    await done;
    await clock.advance(10 * 60_000);
    assert.equal(p.starts.length, 1);
    assert.equal(clock.pending(), 0);
  });
});

describe('scheduler: joining a run in progress', () => {
  test('running(key) settles with the current run; null when idle', async () => {
    const clock = new FakeClock();
    const s = new Scheduler({ clock });
    const p = probe();
    p.hold = true;
    s.set([job(clock, 'a', p)]);
    assert.equal(s.running('a'), null);
    await clock.advance(0);
    const current = s.running('a');
    assert.ok(current);
    let done = false;
    void current.then(() => (done = true));
    await settle();
    assert.equal(done, false);
    p.release.shift()!();
    await settle();
    assert.equal(done, true);
    assert.equal(p.starts.length, 1, 'joining does not start another run');
  });
});

/** A gate that lets no run through until `open()`, then every one waiting and all after. */
function closedGate(): { gate: Gate; open: () => void } {
  let waiting: (() => void)[] | null = [];
  return {
    gate: {
      enter: (go) => (waiting ? waiting.push(go) : go()),
      leave: () => undefined,
    },
    open: () => {
      const now = waiting ?? [];
      waiting = null;
      for (const go of now) go();
    },
  };
}

describe('scheduler: gates', () => {
  test('waiting at the gate does not count against the timeout', async () => {
    const clock = new FakeClock();
    const s = new Scheduler({ clock });
    const { gate, open } = closedGate();
    let aborted = false;
    s.set([
      {
        key: 'queued',
        interval: 60_000,
        timeout: 5_000,
        suspended: false,
        fingerprint: '1',
        firstDelay: () => 0,
        gate,
        run: async ({ signal }) => {
          signal.addEventListener('abort', () => (aborted = true));
          await Promise.resolve();
        },
      },
    ]);
    await clock.advance(20_000);
    assert.equal(aborted, false);
    assert.equal(s.status('queued')!.running, true);
    open();
    await clock.advance(0);
    assert.equal(s.status('queued')!.running, false);
    assert.equal(s.status('queued')!.lastError, null);
  });

  test('a request while the run waits at its gate joins it; once it has begun, it asks for one more', async () => {
    const clock = new FakeClock();
    const s = new Scheduler({ clock });
    const { gate, open } = closedGate();
    const p = probe();
    p.hold = true;
    s.set([job(clock, 'a', p, { firstDelay: () => 3_600_000, gate })]);
    const first = s.request('a');
    const joined = s.request('a');
    let told: unknown = 'not yet';
    s.joinThen('a', (r) => (told = r));
    await settle();
    assert.equal(s.status('a')!.running, true, 'waiting at the gate');
    assert.equal(s.status('a')!.queued, false, 'the second request joined the waiting run');
    open();
    await settle();
    assert.equal(p.starts.length, 1);
    const later = s.request('a');
    await settle();
    assert.equal(s.status('a')!.queued, true, 'a request during the begun run: one follow-up');
    p.release.shift()!();
    const [a, b] = await Promise.all([first, joined]);
    assert.equal(a, b, 'both told the one run that served them');
    assert.equal(told, a, 'and so was the one who joined it');
    await settle();
    assert.equal(p.starts.length, 2, 'the follow-up began');
    p.release.shift()!();
    assert.notEqual(await later, a, 'told the follow-up run');
    assert.equal(p.starts.length, 2);
    s.stop();
  });

  test('admit: a scheduled run another replica owns is skipped without waiting for the gate; a request runs', async () => {
    const clock = new FakeClock();
    const s = new Scheduler({ clock, random: () => 0.5 });
    const p = probe();
    let mine = false;
    let gated = 0;
    s.set([
      job(clock, 'a', p, {
        admit: () => mine,
        gate: {
          enter: (go) => {
            gated++;
            go();
          },
          leave: () => undefined,
        },
      }),
    ]);
    await clock.advance(0);
    await clock.advance(60_000);
    assert.deepEqual(p.starts, [], 'not this replica’s: never run on schedule');
    assert.equal(gated, 0, 'and never queued for a slot');
    assert.equal(s.status('a')!.skips, 2);
    assert.equal(s.status('a')!.runs, 0);
    const r = await s.request('a');
    assert.equal(r?.error, null, 'a request (a webhook, a takeover) runs whoever owns it');
    assert.equal(p.starts.length, 1);
    mine = true;
    await clock.advance(60_000);
    assert.equal(p.starts.length, 2, 'once it is this replica’s, the schedule runs it');
  });
});

describe('scheduler: one timer for every job (issue 27)', () => {
  test('500 jobs on their own jittered schedules hold one clock timer, and each still runs on its interval', async () => {
    const clock = new FakeClock();
    let r = 0;
    const s = new Scheduler({ clock, random: () => (r++ % 100) / 100, startSpread: 10_000 });
    const probes = Array.from({ length: 500 }, () => probe());
    s.set(probes.map((p, i) => job(clock, `j${i}`, p, { firstDelay: undefined })));
    assert.equal(clock.pending(), 1, 'one timer for 500 scheduled jobs, not one each');
    await clock.advance(10_000);
    assert.ok(
      probes.every((p) => p.starts.length === 1),
      'every first run within the start spread',
    );
    assert.equal(clock.pending(), 1, 'rescheduled after their runs: still one timer');
    await clock.advance(60_000 * 1.05);
    for (const [i, p] of probes.entries()) {
      assert.equal(p.starts.length, 2, `j${i}: its second run`);
      const gap = p.starts[1]! - p.starts[0]!;
      assert.ok(gap >= 57_000 && gap <= 63_000, `j${i}: ${gap} ms between runs, within ±5% of 60 s`);
    }
    // A request clears the job's schedule; the stale entry it leaves never runs it twice.
    await s.request('j0');
    assert.equal(probes[0]!.starts.length, 3);
    await clock.advance(60_000 * 1.05);
    assert.equal(probes[0]!.starts.length, 4, 'one run per interval after the request, not two');
    s.stop();
    assert.equal(clock.pending(), 0, 'stopped: no timer left');
  });

  test('5,000 runs waiting at the gate, four passes joined to each: a small record a run', () => {
    const clock = new FakeClock();
    const s = new Scheduler({ clock });
    const { gate } = closedGate();
    const p = probe();
    const keys = Array.from({ length: 5_000 }, (_, i) => `j${i}`);
    s.set(keys.map((k) => job(clock, k, p, { firstDelay: () => 3_600_000, gate })));
    const passes = [0, 1, 2, 3].map(() => () => undefined);
    gc();
    const before = process.memoryUsage().heapUsed;
    for (const pass of passes) for (const k of keys) s.joinThen(k, pass);
    gc();
    const held = (process.memoryUsage().heapUsed - before) / keys.length;
    assert.equal(s.runningCount(), 5_000);
    // ~225 bytes: the run's record, its place at the gate, its four waiters in an array their
    // size. An array pushed to keeps room for ~20 waiters: ~355 bytes.
    assert.ok(held < 280, `${Math.round(held)} bytes a waiting run`);
    s.stop();
  });

  test('runs waiting at the gate hold no timer', async () => {
    const clock = new FakeClock();
    const s = new Scheduler({ clock });
    const { gate, open } = closedGate();
    const p = probe();
    s.set(Array.from({ length: 100 }, (_, i) => job(clock, `j${i}`, p, { gate })));
    await clock.advance(0);
    assert.equal(s.runningCount(), 100, 'all 100 runs started, waiting at the gate');
    assert.equal(clock.pending(), 0, 'no timeout timer before the gate lets a run through');
    open();
    await clock.advance(0);
    assert.equal(p.starts.length, 100);
    assert.equal(clock.pending(), 1, 'done: the next runs scheduled, behind one timer');
  });
});
