/**
 * The daemon's scheduler core: one job per object, each run on its interval with jitter, at most
 * one run per job at a time, requests during a run coalesced into exactly one follow-up, failed
 * runs retried with exponential backoff. Time comes from an injected clock, so every rule here
 * is tested without waiting (test/serve/scheduler.test.ts).
 */
import { errorMessage, promiseOf } from '../util/index.js';

export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/** Why a run started: its timer, a request (webhook, reconcile through, reload), or a retry. */
export type RunTrigger = 'interval' | 'request' | 'retry';

export interface RunContext {
  signal: AbortSignal;
  trigger: RunTrigger;
  /**
   * Aborts `signal` too when `other` aborts (a lease lost), until the run ends. One listener on
   * the run's own controller rather than `AbortSignal.any`, whose weak references and finalizer
   * cost a daemon's first pass ~16 ms over 500 runs (issue 27).
   */
  follow(other: AbortSignal): void;
}

/**
 * A run's context over its own controller; `end` drops what it follows (a lease outlives the
 * run that claimed it only on the way out, but a shared signal outlives every run).
 */
export function runContext(
  controller: AbortController,
  trigger: RunTrigger,
): { ctx: RunContext; end(): void } {
  const unfollow: (() => void)[] = [];
  const follow = (other: AbortSignal): void => {
    if (other.aborted) return controller.abort(other.reason);
    unfollow.push(followSignal(other, controller));
  };
  return {
    ctx: { signal: controller.signal, trigger, follow },
    end: () => unfollow.splice(0).forEach((u) => u()),
  };
}

/**
 * The runs following each signal, behind one listener on it. A local daemon's leases share one
 * signal, and every run added its own listener to it and removed it at its end: ~12.5 µs a run
 * through node's EventTarget without the optimizer, 6.5 ms for 500 runs against 0.3 ms with a set
 * (issue 27). The listener stays for as long as the signal lives; a run that ends leaves the set.
 */
const followers = new WeakMap<AbortSignal, Set<AbortController>>();

function followSignal(other: AbortSignal, controller: AbortController): () => void {
  const runs = followers.get(other) ?? watch(other);
  runs.add(controller);
  return () => void runs.delete(controller);
}

/** The set of runs following `signal`, made with its one listener. */
function watch(signal: AbortSignal): Set<AbortController> {
  const runs = new Set<AbortController>();
  followers.set(signal, runs);
  signal.addEventListener(
    'abort',
    () => {
      const now = [...runs];
      runs.clear();
      for (const c of now) c.abort(signal.reason);
    },
    { once: true },
  );
  return runs;
}

/** How many runs in progress follow `signal` (tests). */
export function followingRuns(signal: AbortSignal): number {
  return followers.get(signal)?.size ?? 0;
}

export interface JobSpec {
  key: string;
  /** Milliseconds between the end of one run and the start of the next (before jitter). */
  interval: number;
  /** A run still going after this long has its signal aborted and counts as failed. */
  timeout: number;
  suspended: boolean;
  /** A changed fingerprint on `set` restarts the job's schedule. */
  fingerprint: string;
  /** Delay before the first run (e.g. until a stored scan becomes due); default a short spread. */
  firstDelay?: () => number;
  /**
   * Where the run waits for capacity (a shared pool of slots, `Slots`). The timeout starts once
   * the gate lets it through: an object waiting behind others has not timed out.
   */
  gate?: Gate;
  /**
   * Asked before a run on the job's interval or a retry (never before a request): false skips it
   * — no run, no wait for the gate — and the job waits for its next interval. Replicas: only the
   * job's preferred owner runs it on schedule.
   */
  admit?: () => boolean;
  run(ctx: RunContext): Promise<void>;
}

/**
 * A pool of slots runs wait in, in arrival order. A run waiting there is its place in the queue
 * and a small record, nothing more: every repository asked for at once (a start, a pass over
 * 10,000 of them) is as many runs waiting, and a chain of promises and closures each was ~2 KB
 * a run, ~20 MB in flight at 10,000 that V8 moved to its old generation (issue 27).
 */
export interface Gate {
  /** Calls `go` once a slot is free: now, or when a run leaves. */
  enter(go: () => void): void;
  /** A run that entered is over: its slot goes to the next in the queue. */
  leave(): void;
}

export interface RunResult {
  key: string;
  trigger: RunTrigger;
  startedAt: number;
  endedAt: number;
  error: string | null;
}

export interface JobStatus {
  key: string;
  suspended: boolean;
  running: boolean;
  /** A follow-up run is queued behind the running one. */
  queued: boolean;
  runs: number;
  /** Failures in a row; 0 after a success. */
  failures: number;
  /** Scheduled runs `admit` turned away (another replica's turn). */
  skips: number;
  nextAt: number | null;
  last: RunResult | null;
  lastError: string | null;
}

export interface SchedulerOptions {
  clock?: Clock;
  random?: () => number;
  /** Each interval is stretched or shrunk by up to this fraction (Flux: 5%). */
  jitter?: number;
  /** First runs without `firstDelay` are spread over [0, startSpread) ms. */
  startSpread?: number;
  backoffBase?: number;
  backoffMax?: number;
  onSettled?: (result: RunResult) => void;
}

/** Told a run's result; null when no run will come. */
type Waiter = (r: RunResult | null) => void;

/** Waiters, one in place (most jobs have one: a pass, or none), an array from the second. */
type Waiters = Waiter | Waiter[] | null;

function addWaiter(w: Waiters, add: Waiter): Waiters {
  if (w === null) return add;
  if (typeof w === 'function') return [w, add];
  // A copy the size of its waiters, while they are few: a pushed-to array keeps room for ~20,
  // and four passes joining each of 10,000 runs left 10,000 of those in flight (~1.7 MB).
  if (w.length < 16) return w.concat(add);
  w.push(add);
  return w;
}

function tell(w: Waiters, result: RunResult | null): void {
  if (w === null) return;
  if (typeof w === 'function') return w(result);
  for (const one of w) one(result);
}

/** A job's run, from its start (perhaps waiting at its gate) to its end. */
interface Run {
  spec: JobSpec;
  trigger: RunTrigger;
  startedAt: number;
  /** Through the gate: its timeout counts, and a request now asks for a run after it. */
  begun: boolean;
  /** Told its result: who asked before it began, or joined it. */
  waiters: Waiters;
  /** `Scheduler.running`'s promise, made when asked for. */
  ended: Promise<void> | null;
}

interface Job {
  spec: JobSpec;
  /** The job's entry in the timer wheel (`Due.seq`) when a run is scheduled, else 0. */
  due: number;
  /** What the scheduled run is: on the interval, or a retry. */
  dueTrigger: RunTrigger;
  nextAt: number | null;
  run: Run | null;
  followUp: boolean;
  /** Told the result of the next run to start. */
  waiting: Waiters;
  runs: number;
  failures: number;
  skips: number;
  last: RunResult | null;
  lastError: string | null;
  removed: boolean;
}

export class TimeoutError extends Error {
  override name = 'TimeoutError';
}

/** A scheduled run in the timer wheel; stale once its job's `due` is another `seq`. */
interface Due {
  at: number;
  seq: number;
  job: Job;
}

/**
 * The scheduled runs of every job, earliest first, behind one clock timer (issue 27). A timer
 * per job cost each of 10,000 jobs a Timeout, its list and a closure, for what is one ordered
 * queue; entries of rescheduled jobs are left in place, skipped when they come up, and dropped
 * all at once when they outnumber the live ones.
 */
class TimerWheel {
  readonly #heap: Due[] = [];
  #seq = 0;
  #live = 0;
  #timer: unknown = null;
  #timerAt = Infinity;

  constructor(
    private readonly clock: Clock,
    private readonly fire: (job: Job) => void,
  ) {}

  add(job: Job, at: number): void {
    this.remove(job);
    const due: Due = { at, seq: ++this.#seq, job };
    job.due = due.seq;
    this.#live++;
    this.#push(due);
    if (this.#heap.length > 64 && this.#heap.length > 3 * this.#live) this.#compact();
    this.#arm();
  }

  remove(job: Job): void {
    if (job.due === 0) return;
    job.due = 0;
    this.#live--;
    if (this.#live === 0) this.clear();
  }

  /** Every entry dropped and the clock timer cleared (jobs' `due` is the caller's to reset). */
  clear(): void {
    this.#heap.length = 0;
    this.#live = 0;
    this.#disarm();
  }

  /** Clock timers this wheel holds: 0 or 1, whatever the number of jobs. */
  get timers(): number {
    return this.#timer === null ? 0 : 1;
  }

  #arm(): void {
    while (this.#heap.length > 0 && this.#heap[0]!.seq !== this.#heap[0]!.job.due) this.#pop();
    const top = this.#heap[0];
    if (!top) return this.#disarm();
    if (this.#timer !== null && this.#timerAt <= top.at) return;
    this.#disarm();
    this.#timerAt = top.at;
    this.#timer = this.clock.setTimeout(() => this.#tick(), Math.max(0, top.at - this.clock.now()));
  }

  #disarm(): void {
    if (this.#timer !== null) this.clock.clearTimeout(this.#timer);
    this.#timer = null;
    this.#timerAt = Infinity;
  }

  /**
   * Starts every run due by now, in the order they were due (then scheduled). Runs scheduled by
   * these starts wait for the next tick, as they would have waited for a timer of their own.
   */
  #tick(): void {
    this.#timer = null;
    this.#timerAt = Infinity;
    const now = this.clock.now();
    const due: Job[] = [];
    while (this.#heap.length > 0 && this.#heap[0]!.at <= now) {
      const d = this.#pop();
      if (d.seq !== d.job.due) continue;
      d.job.due = 0;
      this.#live--;
      due.push(d.job);
    }
    for (const job of due) this.fire(job);
    this.#arm();
  }

  #compact(): void {
    const live = this.#heap.filter((d) => d.seq === d.job.due);
    this.#heap.length = 0;
    for (const d of live) this.#push(d);
  }

  #less(a: Due, b: Due): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  #push(d: Due): void {
    const h = this.#heap;
    h.push(d);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#less(h[i]!, h[parent]!)) break;
      [h[i], h[parent]] = [h[parent]!, h[i]!];
      i = parent;
    }
  }

  #pop(): Due {
    const h = this.#heap;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.#less(h[l]!, h[m]!)) m = l;
        if (r < h.length && this.#less(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }
}

/** The job's waiters for its next run, taken from it. */
function takeWaiting(job: Job): Waiters {
  const w = job.waiting;
  job.waiting = null;
  return w;
}

/** A promise of the run's end, made once. */
function ended(run: Run): Promise<void> {
  return (run.ended ??= new Promise<void>(
    (resolve) => (run.waiters = addWaiter(run.waiters, () => resolve())),
  ));
}

export class Scheduler {
  private readonly jobs = new Map<string, Job>();
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly opts: Required<Omit<SchedulerOptions, 'clock' | 'random' | 'onSettled'>>;
  private readonly wheel: TimerWheel;
  private stopped = false;

  constructor(private readonly options: SchedulerOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.opts = {
      jitter: options.jitter ?? 0.05,
      startSpread: options.startSpread ?? 5_000,
      backoffBase: options.backoffBase ?? 1_000,
      backoffMax: options.backoffMax ?? 5 * 60_000,
    };
    this.wheel = new TimerWheel(this.clock, (job) => {
      job.nextAt = null;
      if (!job.run) this.start(job, job.dueTrigger);
    });
  }

  /** Clock timers the scheduler holds for scheduled runs: at most one, however many jobs. */
  scheduledTimers(): number {
    return this.wheel.timers;
  }

  /**
   * Makes the job set equal to `specs`: new jobs start, missing ones stop (a run in progress
   * finishes), jobs whose fingerprint changed get the new spec and a fresh schedule.
   */
  set(specs: readonly JobSpec[]): { added: string[]; removed: string[]; changed: string[] } {
    const added: string[] = [];
    const removed: string[] = [];
    const changed: string[] = [];
    const wanted = new Map(specs.map((s) => [s.key, s]));
    for (const [key, job] of this.jobs) {
      if (wanted.has(key)) continue;
      this.clearTimer(job);
      job.removed = true;
      if (job.run) this.orphans.add(ended(job.run));
      this.jobs.delete(key);
      tell(takeWaiting(job), null);
      removed.push(key);
    }
    for (const spec of specs) {
      const job = this.jobs.get(spec.key);
      if (!job) {
        const fresh: Job = {
          spec,
          due: 0,
          dueTrigger: 'interval',
          nextAt: null,
          run: null,
          followUp: false,
          waiting: null,
          runs: 0,
          failures: 0,
          skips: 0,
          last: null,
          lastError: null,
          removed: false,
        };
        this.jobs.set(spec.key, fresh);
        this.schedule(fresh, this.firstDelay(spec));
        added.push(spec.key);
        continue;
      }
      const previous = job.spec;
      job.spec = spec;
      if (previous.fingerprint === spec.fingerprint) continue;
      changed.push(spec.key);
      job.failures = 0;
      // A running job picks up its new schedule when the run ends.
      if (!job.run) this.schedule(job, this.firstDelay(spec));
    }
    return { added, removed, changed };
  }

  /**
   * Runs the job as soon as possible: now when idle, else once right after the current run —
   * however many requests arrive meanwhile. Resolves with the result of a run that started
   * after the request, or null when none will (unknown, suspended, removed, stopped).
   */
  request(key: string): Promise<RunResult | null> {
    return new Promise((resolve) => this.requestThen(key, resolve));
  }

  /**
   * `request` without a promise: `done` is called with what `request` resolves with, at once when
   * that is null. For a caller waiting on thousands of jobs at once (a pass's scans, issue 27).
   * A run still waiting at its gate has not begun: the request joins it. `done` must not throw:
   * the run's other waiters are told after it.
   */
  requestThen(key: string, done: Waiter): void {
    const job = this.jobs.get(key);
    if (!job || job.spec.suspended || this.stopped) return done(null);
    const run = job.run;
    if (run && !run.begun) {
      run.waiters = addWaiter(run.waiters, done);
      return;
    }
    job.waiting = addWaiter(job.waiting, done);
    if (run) job.followUp = true;
    else this.start(job, 'request');
  }

  /**
   * `done` with the result of the job's run in progress (begun, or waiting at its gate); with no
   * run in progress, as `requestThen`. Without a promise, as `requestThen`.
   */
  joinThen(key: string, done: Waiter): void {
    const run = this.jobs.get(key)?.run;
    if (run) run.waiters = addWaiter(run.waiters, done);
    else this.requestThen(key, done);
  }

  /**
   * The result of the job's next run to start from now on, without asking for one (a reconcile
   * asks through the work queue, which may wake another replica instead); null when the job is
   * unknown, removed or the scheduler stops first.
   */
  next(key: string): Promise<RunResult | null> {
    const job = this.jobs.get(key);
    if (!job || this.stopped) return Promise.resolve(null);
    return new Promise((resolve) => (job.waiting = addWaiter(job.waiting, resolve)));
  }

  /** A run of the job is in progress: begun, or waiting at its gate. */
  isRunning(key: string): boolean {
    return (this.jobs.get(key)?.run ?? null) !== null;
  }

  /** Settles when the job's run in progress ends; null when it is not running. */
  running(key: string): Promise<void> | null {
    const run = this.jobs.get(key)?.run;
    return run ? ended(run) : null;
  }

  has(key: string): boolean {
    return this.jobs.has(key);
  }

  status(key: string): JobStatus | null {
    const job = this.jobs.get(key);
    return job ? this.statusOf(job) : null;
  }

  statuses(): JobStatus[] {
    return [...this.jobs.values()].map((j) => this.statusOf(j));
  }

  runningCount(): number {
    let n = 0;
    for (const j of this.jobs.values()) if (j.run) n++;
    return n;
  }

  /** Takes no more work: timers cleared, queued follow-ups dropped; runs in progress go on. */
  stop(): void {
    this.stopped = true;
    for (const job of this.jobs.values()) {
      this.clearTimer(job);
      job.followUp = false;
      tell(takeWaiting(job), null);
    }
    this.wheel.clear();
  }

  /** Settles when no run is in progress (after `stop`, nothing new starts). */
  async idle(): Promise<void> {
    for (;;) {
      const running = [...this.jobs.values()].flatMap((j) => (j.run ? [ended(j.run)] : []));
      running.push(...this.orphans);
      if (running.length === 0) return;
      await Promise.allSettled(running);
    }
  }

  /** Runs of removed jobs still going: `idle` waits for them too. */
  private readonly orphans = new Set<Promise<void>>();

  private statusOf(job: Job): JobStatus {
    return {
      key: job.spec.key,
      suspended: job.spec.suspended,
      running: job.run !== null,
      queued: job.followUp,
      runs: job.runs,
      failures: job.failures,
      skips: job.skips,
      nextAt: job.nextAt,
      last: job.last,
      lastError: job.lastError,
    };
  }

  private firstDelay(spec: JobSpec): number {
    if (spec.firstDelay) return Math.max(0, spec.firstDelay());
    return Math.floor(this.random() * Math.min(this.opts.startSpread, spec.interval));
  }

  private jittered(interval: number): number {
    return Math.max(1, Math.round(interval * (1 + (this.random() * 2 - 1) * this.opts.jitter)));
  }

  /** Exponential, capped by backoffMax and by the interval itself: a retry never waits longer than a tick. */
  backoff(failures: number, interval: number): number {
    const raw = this.opts.backoffBase * 2 ** Math.min(30, Math.max(0, failures - 1));
    return Math.max(1, Math.min(raw, this.opts.backoffMax, interval));
  }

  private clearTimer(job: Job): void {
    this.wheel.remove(job);
    job.nextAt = null;
  }

  private schedule(job: Job, delay: number, trigger: RunTrigger = 'interval'): void {
    this.clearTimer(job);
    if (this.stopped || job.removed || job.spec.suspended) return;
    job.nextAt = this.clock.now() + delay;
    job.dueTrigger = trigger;
    this.wheel.add(job, job.nextAt);
  }

  private start(job: Job, trigger: RunTrigger): void {
    this.clearTimer(job);
    if (trigger !== 'request' && job.spec.admit && !job.spec.admit()) {
      job.skips++;
      this.schedule(job, this.jittered(job.spec.interval));
      return;
    }
    job.followUp = false;
    const run: Run = {
      spec: job.spec,
      trigger,
      startedAt: this.clock.now(),
      begun: false,
      waiters: takeWaiting(job),
      ended: null,
    };
    job.run = run;
    job.runs++;
    // Its signal and timer are made once the gate lets it through: until then it is this record.
    const gate = run.spec.gate;
    if (gate) gate.enter(() => this.begin(job, run));
    else this.begin(job, run);
  }

  private begin(job: Job, run: Run): void {
    run.begun = true;
    const { spec } = run;
    const controller = new AbortController();
    let timedOut = false;
    const timeout = this.clock.setTimeout(() => {
      timedOut = true;
      controller.abort(new TimeoutError(`${spec.key} timed out after ${spec.timeout} ms`));
    }, spec.timeout);
    const context = runContext(controller, run.trigger);
    const end = (failure: string | null): void => {
      context.end();
      this.clock.clearTimeout(timeout);
      spec.gate?.leave();
      const error = timedOut ? `timed out after ${Math.round(spec.timeout / 1000)}s` : failure;
      this.finish(job, {
        key: spec.key,
        trigger: run.trigger,
        startedAt: run.startedAt,
        endedAt: this.clock.now(),
        error,
      });
    };
    promiseOf(() => spec.run(context.ctx)).then(
      () => end(null),
      (err: unknown) => end(errorMessage(err)),
    );
  }

  private finish(job: Job, result: RunResult): void {
    const run = job.run!;
    job.run = null;
    if (run.ended) this.orphans.delete(run.ended);
    job.last = result;
    if (result.error === null) {
      job.failures = 0;
      job.lastError = null;
    } else {
      job.failures++;
      job.lastError = result.error;
    }
    try {
      this.options.onSettled?.(result);
    } finally {
      tell(run.waiters, result);
    }
    if (job.removed || this.stopped) {
      tell(takeWaiting(job), null);
      return;
    }
    if (job.followUp) {
      this.start(job, 'request');
      return;
    }
    if (result.error !== null) this.schedule(job, this.backoff(job.failures, job.spec.interval), 'retry');
    else this.schedule(job, this.jittered(job.spec.interval));
  }
}
