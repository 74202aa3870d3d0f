/**
 * The daemon's job rules without a daemon: the settle retry (its delays, its bound, stopping),
 * how queued webhooks fold into a pass, what an accepted webhook queues, the runs under a lease
 * (a follow-up when work arrived during the run; none when the lease was lost), and a failed
 * pass keeping its webhook work, and repository runs waiting for a scan slot holding nothing of
 * a run (no lease, no timer) until they have one. A manual clock and the local coordinator; no timer is waited on.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/types.js';
import { createScanClients } from '../../src/scan/index.js';
import {
  LocalCoordinator,
  type Coordinator,
  type Lease,
  type TakenWork,
  type WorkItem,
} from '../../src/serve/cluster/index.js';
import { ServeEvents } from '../../src/serve/events.js';
import {
  AutomationJobs,
  automationJob,
  JobLeases,
  publishWebhook,
  RepositoryJobs,
  repositoryJob,
  SettleRetries,
} from '../../src/serve/jobs/index.js';
import { carryPending, mergePending, scanSince, type Pending } from '../../src/serve/jobs/work.js';
import { mergeWork } from '../../src/serve/cluster/work.js';
import { ServeMetrics } from '../../src/serve/metrics.js';
import { runContext, Scheduler, type RunContext, type RunTrigger } from '../../src/serve/scheduler.js';
import type { LoadedConfig } from '../../src/serve/source/index.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/index.js';
import { Slots, silentLogger } from '../../src/util/index.js';
import { configDir } from '../config/fixtures.js';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { FakeClock, settle } from '../helpers/clock.js';

// A real collection before each heap reading, so garbage is not mistaken for what is kept.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** A fresh run's context, as the scheduler makes it (a lease it follows aborts only this run). */
const request = (trigger: RunTrigger = 'request'): RunContext =>
  runContext(new AbortController(), trigger).ctx;

describe('SettleRetries', () => {
  test('100 ms, doubling, six times; then no more', async () => {
    const clock = new FakeClock();
    const retries = new SettleRetries(clock);
    const fired: number[] = [];
    for (let retry = 0; retry < 6; retry++) {
      const start = clock.now();
      assert.equal(
        retries.later(retry, () => fired.push(clock.now() - start)),
        true,
        `retry ${retry + 1} is taken`,
      );
      const delay = 100 * 2 ** retry;
      await clock.advance(delay - 1);
      assert.equal(fired.length, retry, `retry ${retry + 1} not before ${delay} ms`);
      await clock.advance(1);
      assert.equal(fired.length, retry + 1, `retry ${retry + 1} at ${delay} ms`);
    }
    assert.deepEqual(fired, [100, 200, 400, 800, 1600, 3200]);
    assert.equal(
      retries.later(6, () => fired.push(-1)),
      false,
      'a seventh is refused',
    );
    assert.equal(clock.pending(), 0, 'and nothing is scheduled for it');
  });

  test('stopping drops the waiting re-runs and refuses new ones', async () => {
    const clock = new FakeClock();
    const retries = new SettleRetries(clock);
    let ran = 0;
    assert.equal(
      retries.later(0, () => ran++),
      true,
    );
    retries.close();
    assert.equal(clock.pending(), 0, 'the waiting timer is cleared');
    await clock.advance(10_000);
    assert.equal(ran, 0, 'the dropped re-run never runs');
    assert.equal(
      retries.later(0, () => ran++),
      false,
      'none is taken once stopping',
    );
  });
});

describe('queued webhooks folded into a pass', () => {
  const work = (over: Partial<TakenWork> = {}): TakenWork => ({
    key: 'ImageUpdateAutomation/apps/front',
    repositories: ['apps/web'],
    tags: ['apps/web:1.1.0'],
    firstAt: 2000,
    events: 3,
    version: '7',
    ...over,
  });

  test('mergePending: every event counted, the repositories and tags joined, the earliest arrival kept', () => {
    assert.equal(mergePending(undefined, null), undefined, 'nothing queued, nothing pending');
    const local: Pending = {
      repositories: new Set(['apps/app']),
      tags: new Set(['apps/app:2.0.0']),
      firstAt: 5000,
      lastAt: 5000,
      count: 1,
      retries: 2,
    };
    const p = mergePending(local, work())!;
    assert.deepEqual([...p.repositories].sort(), ['apps/app', 'apps/web']);
    assert.deepEqual([...p.tags].sort(), ['apps/app:2.0.0', 'apps/web:1.1.0']);
    assert.equal(p.firstAt, 2000, 'the earlier arrival');
    assert.equal(p.count, 4, '1 + the 3 events queued');
    assert.equal(p.retries, 2, 'the retries of the episode carried on');
    const earlier: Pending = {
      repositories: new Set(),
      tags: new Set(),
      firstAt: 500,
      lastAt: 500,
      count: 1,
      retries: 0,
    };
    assert.equal(mergePending(earlier, work())!.firstAt, 500, 'the earlier arrival, whichever side has it');
    const fresh = mergePending(undefined, work({ firstAt: 9000, events: 1 }))!;
    assert.equal(fresh.count, 1);
    assert.equal(fresh.firstAt, 9000);
    assert.equal(fresh.retries, 0);
  });

  test('carryPending: the retried webhooks are kept, with one retry more and their first arrival', () => {
    const retried: Pending = {
      repositories: new Set(['apps/web']),
      tags: new Set(['apps/web:1.1.0']),
      firstAt: 1000,
      lastAt: 1500,
      count: 2,
      retries: 3,
    };
    const p = carryPending(undefined, retried);
    assert.equal(p.retries, 4);
    assert.equal(p.firstAt, 1000);
    assert.deepEqual([...p.tags], ['apps/web:1.1.0']);
    const later: Pending = {
      repositories: new Set(['apps/app']),
      tags: new Set(),
      firstAt: 4000,
      lastAt: 4000,
      count: 1,
      retries: 0,
    };
    const q = carryPending(later, retried);
    assert.equal(q.firstAt, 1000, 'the earliest of both');
    assert.equal(q.retries, 4);
    assert.deepEqual([...q.repositories].sort(), ['apps/app', 'apps/web']);
    // The retried pass's scan began after those webhooks and did not list the tag yet.
    assert.equal(p.lastAt, null, 'a retry asks for a scan newer than its last pass');
    assert.equal(q.lastAt, null);
    assert.equal(scanSince(p, 9000), 9000, 'then the moment the pass takes its work');
  });

  test("the newest arrival: a pass's scans must have begun after it, known or not", () => {
    // The queue keeps it across merges; one item without it (read back after a restart, or from
    // the PostgreSQL queue) makes it unknown.
    const a = { key: 'k', repositories: ['apps/web'], tags: [], firstAt: 1000, lastAt: 1000, events: 1 };
    const b = { key: 'k', repositories: ['apps/app'], tags: [], firstAt: 3000, lastAt: 3000, events: 1 };
    const both = mergeWork(mergeWork(undefined, a), b);
    assert.deepEqual([both.firstAt, both.lastAt, both.events], [1000, 3000, 2]);
    assert.equal(mergeWork(b, a).lastAt, 3000, 'whichever came first into the queue');
    const { lastAt: _, ...journaled } = a;
    assert.equal(mergeWork(journaled, b).lastAt, undefined, 'not known when one side does not know');
    assert.equal(mergeWork(b, journaled).lastAt, undefined);

    const taken = mergePending(undefined, { ...both, version: '1' })!;
    assert.equal(taken.lastAt, 3000);
    assert.equal(scanSince(taken, 5000), 3000, 'a scan begun after the newest arrival will do');
    assert.equal(scanSince(mergePending(undefined, { ...journaled, version: '1' }), 5000), 5000);
    assert.equal(scanSince(undefined, 5000), 5000);
    // Folded with what a settle retry left: not known.
    const retry = carryPending(undefined, taken);
    assert.equal(scanSince(mergePending(retry, { ...b, lastAt: 4000, version: '2' }), 6000), 6000);
    // Never later than the taking, whatever a clock said.
    assert.equal(scanSince({ ...taken, lastAt: 9000 }, 5000), 5000);
  });
});

const AUTOMATION = (
  name: string,
  suspend: boolean,
  selector: string,
) => `apiVersion: image.toolkit.fluxcd.io/v1beta2
kind: ImageUpdateAutomation
metadata: {name: ${name}, namespace: apps}
spec:
  interval: 30m
  suspend: ${suspend}
  sourceRef: {kind: GitRepository, name: fleet}
  git:
    commit:
      author: {name: pawl, email: pawl@example.com}
    push: {branch: main}
  update: {path: ./clusters}
  policySelector:
    matchLabels: {app: ${selector}}
`;

const REPO = (name: string) => `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: ${name}, namespace: apps}
spec:
  image: ghcr.io/org/${name}
  interval: 5m
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: ${name}, namespace: apps, labels: {app: ${name}}}
spec:
  imageRepositoryRef: {name: ${name}}
  policy:
    semver: {range: ">=1.0.0"}
`;

let config: Config;
let stateDir: string;
let cleanup: () => Promise<void>;

before(async () => {
  const dir = await configDir({
    'all.yaml': [
      REPO('web'),
      REPO('app'),
      REPO('lonely'),
      // Nothing listens on port 1: the clone fails at once, and so the pass.
      `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: fleet, namespace: apps}
spec:
  url: http://127.0.0.1:1/fleet.git
  interval: 1m
  ref: {branch: main}
`,
      AUTOMATION('front', false, 'web'),
      AUTOMATION('paused', true, 'app'),
    ].join('---\n'),
  });
  stateDir = await mkdtemp(join(tmpdir(), 'pawl-jobs-'));
  cleanup = async () => {
    await dir.cleanup();
    await rm(stateDir, { recursive: true, force: true });
  };
  const loaded = await loadConfig([dir.dir]);
  assert.deepEqual(
    loaded.problems.filter((p) => p.severity === 'error'),
    [],
    'the fixture is valid',
  );
  config = loaded.config;
});
after(() => cleanup());

describe('publishWebhook: what an accepted webhook queues', () => {
  test('the automations of the named repositories; a repository none uses; never a suspended automation', async () => {
    const published: WorkItem[] = [];
    const dependents = new Map([
      ['apps/web', ['apps/front']],
      ['apps/app', ['apps/paused']],
    ]);
    const started = await publishWebhook(
      { publish: async (items) => void published.push(...items) },
      { config, dependents },
      1234,
      {
        repositories: ['apps/web', 'apps/app', 'apps/lonely'],
        automations: [],
        tags: ['apps/web:1.1.0', 'apps/lonely:3.0.0', 'apps/app:9.0.0'],
      },
    );
    assert.deepEqual(started, { automations: ['apps/front'], repositories: ['apps/app', 'apps/lonely'] });
    assert.deepEqual(published, [
      {
        key: automationJob('apps/front'),
        repositories: ['apps/web'],
        tags: ['apps/web:1.1.0'],
        firstAt: 1234,
        lastAt: 1234,
        events: 1,
      },
      {
        key: repositoryJob('apps/app'),
        repositories: ['apps/app'],
        tags: ['apps/app:9.0.0'],
        firstAt: 1234,
        lastAt: 1234,
        events: 1,
      },
      {
        key: repositoryJob('apps/lonely'),
        repositories: ['apps/lonely'],
        tags: ['apps/lonely:3.0.0'],
        firstAt: 1234,
        lastAt: 1234,
        events: 1,
      },
    ]);
  });

  test('an automation the Receiver names runs with no image named; a suspended one does not', async () => {
    const published: WorkItem[] = [];
    const started = await publishWebhook(
      { publish: async (items) => void published.push(...items) },
      { config, dependents: new Map() },
      5,
      { repositories: [], automations: ['apps/front', 'apps/paused'], tags: [] },
    );
    assert.deepEqual(started, { automations: ['apps/front'], repositories: [] });
    assert.deepEqual(published, [
      { key: automationJob('apps/front'), repositories: [], tags: [], firstAt: 5, lastAt: 5, events: 1 },
    ]);
  });
});

/** The local coordinator, with who owns what and what an ack answers up to the test. */
function coordinator(over: Partial<Pick<Coordinator, 'owns' | 'claim' | 'ack'>> = {}): Coordinator {
  const local = new LocalCoordinator(() => 0);
  return new Proxy(local, {
    get(target, prop, receiver) {
      if (typeof prop === 'string' && prop in over) return over[prop as keyof typeof over];
      const v = Reflect.get(target, prop, receiver) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

const ITEM = (key: string): WorkItem => ({
  key,
  repositories: ['apps/web'],
  tags: [],
  firstAt: 1,
  events: 1,
});

describe('JobLeases: runs under the lease', () => {
  const KEY = automationJob('apps/front');

  function leases(c: Coordinator) {
    const requested: string[] = [];
    const l = new JobLeases({
      coordinator: c,
      metrics: new ServeMetrics(),
      log: silentLogger,
      request: (key) => requested.push(key),
    });
    return { l, requested };
  }

  test('work that arrives during the run gets one follow-up run; work done gets none', async () => {
    const c = coordinator();
    const { l, requested } = leases(c);
    await c.publish([ITEM(KEY)]);
    await l.run(KEY, request(), async (claimed) => {
      const work = await claimed.take();
      assert.ok(work, 'the queued work is taken');
      await c.publish([ITEM(KEY)]);
      await claimed.done(work);
    });
    assert.deepEqual(requested, [KEY], 'one more run for what arrived meanwhile');
    await l.run(KEY, request(), async (claimed) => {
      const work = await claimed.take();
      assert.ok(work, 'the work that arrived is still queued');
      await claimed.done(work);
    });
    assert.deepEqual(requested, [KEY], 'nothing arrived this time: no follow-up');
    await l.run(KEY, request(), async (claimed) => {
      assert.equal(await claimed.take(), null, 'the queue is empty');
      await claimed.done(null);
    });
    assert.deepEqual(requested, [KEY]);
  });

  test('an ack refused because the lease was lost asks for no follow-up: the new holder has the work', async () => {
    const controller = new AbortController();
    const lease: Lease = { key: KEY, token: '1', acquiredAt: new Date(0), signal: controller.signal };
    const c = coordinator({ claim: async () => lease, ack: async () => false });
    const { l, requested } = leases(c);
    await l.run(KEY, request(), async (claimed) => {
      assert.equal(claimed.signal.aborted, false);
      controller.abort(new Error('lease lost'));
      assert.equal(claimed.signal.aborted, true, "the run's signal ends with the lease");
      await claimed.done({ ...ITEM(KEY), version: '1' });
    });
    assert.deepEqual(requested, []);
  });

  test('an ack the database could not take does not fail the run: one more run does the work', async () => {
    const c = coordinator({
      ack: async () => {
        throw new Error('connection reset');
      },
    });
    const { l, requested } = leases(c);
    await c.publish([ITEM(KEY)]);
    await l.run(KEY, request(), async (claimed) => {
      await claimed.done(await claimed.take());
    });
    assert.deepEqual(requested, [KEY]);
  });

  test('a run by the clock is the preferred owner’s; a request claims whatever the owner; a held key is skipped', async () => {
    let ran = 0;
    const notMine = leases(coordinator({ owns: () => false }));
    assert.equal(notMine.l.admit(KEY), false);
    await notMine.l.run(KEY, request('interval'), async () => void ran++);
    assert.equal(ran, 0, 'not the owner: the interval run does nothing');
    assert.equal(notMine.l.skipped(KEY), 'not-owner');
    await notMine.l.run(KEY, request(), async () => void ran++);
    assert.equal(ran, 1, 'a request runs on any replica');
    assert.equal(notMine.l.skipped(KEY), null, 'and clears the skip');

    const held = leases(coordinator({ claim: async () => null }));
    await held.l.run(KEY, request(), async () => void ran++);
    assert.equal(ran, 1, 'another holds the lease: nothing runs');
    assert.equal(held.l.skipped(KEY), 'held');

    const down = leases(
      coordinator({
        claim: async () => {
          throw new Error('connection refused');
        },
      }),
    );
    await assert.rejects(
      down.l.run(KEY, request(), async () => void ran++),
      /cannot claim ImageUpdateAutomation\/apps\/front: the database is unreachable \(connection refused\)/,
    );
    assert.equal(ran, 1);
  });

  test('the lease is released however the run ends', async () => {
    const c = coordinator();
    const { l } = leases(c);
    await assert.rejects(
      l.run(KEY, request(), async () => {
        throw new Error('boom');
      }),
      /boom/,
    );
    assert.ok(await c.claim(KEY), 'the key is free again');
  });
});

describe('AutomationJobs: the schedule fingerprint', () => {
  test('a digest of the same size however many policies, that changes with any of them', async () => {
    const jobs = new AutomationJobs({
      config: () => ({ config }) as unknown as LoadedConfig,
      runs: { request: async () => null, running: () => null } as never,
      clock: new FakeClock(),
    } as never);
    const automation = config.automations.get('apps/front')!;
    const fp = (c: Config, repos: string[]) =>
      jobs.spec(automation, c, new Map([['apps/front', repos]])).fingerprint;
    const one = fp(config, ['apps/web']);
    // The scheduler keeps one per job for as long as the daemon runs (issue 27: ~35 MB of text
    // for 10 selector-less automations over 10,000 policies).
    const web = config.imagePolicies.get('apps/web')!;
    const many = new Map(config.imagePolicies);
    for (let i = 0; i < 1000; i++)
      many.set(`apps/web-${i}`, { ...web, metadata: { ...web.metadata, name: `web-${i}` } });
    const large = fp({ ...config, imagePolicies: many }, ['apps/web']);
    assert.equal(large.length, one.length, 'as long with 1,001 policies as with one');
    assert.ok(one.length <= 64);
    assert.notEqual(large, one, 'another policy: another fingerprint');
    const changed = new Map(config.imagePolicies);
    changed.set('apps/web', {
      ...web,
      spec: { ...web.spec, policy: { strategy: 'semver', range: '>=2.0.0' } },
    });
    assert.notEqual(fp({ ...config, imagePolicies: changed }, ['apps/web']), one, "a policy's spec changed");
    assert.notEqual(fp(config, ['apps/web', 'apps/app']), one, 'its repositories changed');
    assert.equal(fp(config, ['apps/web']), one, 'nothing changed: the same fingerprint');
  });
});

describe('RepositoryJobs: the schedule fingerprint', () => {
  test("a digest that changes with the repository's spec and its Secrets' data, and only with them", () => {
    let current = config;
    const jobs = new RepositoryJobs({
      config: () => ({ config: current }) as unknown as LoadedConfig,
    } as never);
    const name = [...config.imageRepositories.keys()][0]!;
    const repo = config.imageRepositories.get(name)!;
    const fp = (r: typeof repo) => jobs.spec(r).fingerprint;
    const one = fp(repo);
    // The scheduler keeps one per job for as long as the daemon runs (issue 27).
    assert.ok(one.length <= 44, `a digest, not the spec's text (${one.length})`);
    assert.equal(fp({ ...repo, metadata: { ...repo.metadata } }), one, 'the same spec: the same fingerprint');
    assert.notEqual(fp({ ...repo, spec: { ...repo.spec, interval: repo.spec.interval + 1 } }), one);
    const withSecret = { ...repo, spec: { ...repo.spec, secretRef: 'pull' } };
    const secretAs = (value: string) => {
      const secrets = new Map(config.secrets);
      secrets.set(`${repo.metadata.namespace}/pull`, { data: { token: Buffer.from(value) } } as never);
      current = { ...config, secrets };
      return fp(withSecret);
    };
    const a = secretAs('a');
    assert.notEqual(a, one, 'a Secret named');
    assert.equal(secretAs('a'), a, "the same Secret's data");
    assert.notEqual(secretAs('b'), a, "the Secret's data changed");
  });
});

describe('AutomationJobs: a failed pass', () => {
  let store: SqliteStore;
  before(() => {
    store = openSqliteStore(stateDir, {});
  });
  after(() => store.close());

  test('keeps its webhook work queued, and the next pass takes it again', async () => {
    const c = new LocalCoordinator(() => Date.now());
    const clock = new FakeClock();
    const requested: string[] = [];
    const metrics = new ServeMetrics();
    const current = {
      config,
      clients: createScanClients(config, { log: silentLogger }),
    } as unknown as LoadedConfig;
    const jobs = new AutomationJobs({
      config: () => current,
      store,
      runs: { request: async (key: string) => void requested.push(key), running: () => null } as never,
      leases: new JobLeases({
        coordinator: c,
        metrics,
        log: silentLogger,
        request: (k) => requested.push(k),
      }),
      settle: new SettleRetries(clock),
      metrics,
      events: new ServeEvents(silentLogger),
      log: silentLogger,
      clock,
      stopping: () => false,
      slots: new Slots(1),
      scans: { ensureScanned: async () => [] },
      stateDir,
      dryRun: false,
      timeoutMs: 60_000,
      interrupted: new Set(),
    });
    const automation = config.automations.get('apps/front')!;
    const spec = jobs.spec(automation, config, new Map([['apps/front', ['apps/web']]]));
    await c.publish([{ ...ITEM(spec.key), events: 2 }]);
    await assert.rejects(spec.run(request()), (err: Error) => {
      assert.match(err.message, /127\.0\.0\.1:1|fleet/, 'the pass failed on the clone');
      return true;
    });
    assert.equal(jobs.lastPass.get('apps/front')?.report.automations[0]?.result, 'failed');
    assert.equal(jobs.lastPass.get('apps/front')?.webhooks, 2, 'the failed pass had the 2 webhooks');
    await settle();
    const lease = (await c.claim(spec.key))!;
    const left = await c.take(lease);
    assert.ok(left, 'the webhook work is still queued after the failed pass');
    assert.equal(left.events, 2);
    assert.deepEqual(left.repositories, ['apps/web']);
    await c.release(lease);
    assert.deepEqual(requested, [], 'a failed pass asks for no settle retry (its backoff retries it)');
  });
});

describe('RepositoryJobs: runs waiting for a scan slot', () => {
  let store: SqliteStore;
  before(() => {
    store = openSqliteStore(stateDir, {});
  });
  after(() => store.close());

  /** Repository jobs over `cfg` behind one scan slot, their leases through `c`. */
  function slotJobs(cfg: Config, c: Coordinator, clock: FakeClock) {
    const metrics = new ServeMetrics();
    const current = {
      config: cfg,
      clients: createScanClients(config, { log: silentLogger }),
    } as unknown as LoadedConfig;
    const slots = new Slots(1);
    const scheduler = new Scheduler({ clock });
    const jobs = new RepositoryJobs({
      config: () => current,
      store,
      runs: scheduler,
      leases: new JobLeases({ coordinator: c, metrics, log: silentLogger, request: () => undefined }),
      settle: new SettleRetries(clock),
      metrics,
      events: new ServeEvents(silentLogger),
      log: silentLogger,
      clock,
      stopping: () => false,
      slots,
      interrupted: new Set(),
    });
    return { slots, scheduler, jobs };
  }

  test('every repository asked for at once: none claims its lease or starts a timer before it has a slot', async () => {
    const clock = new FakeClock();
    let claims = 0;
    let refuse = false;
    const leases = coordinator();
    // Counted; once the slot is free, another replica holds every lease: the runs scan nothing.
    const c = coordinator({
      claim: async (key) => {
        claims++;
        return refuse ? null : leases.claim(key);
      },
    });
    const { slots, scheduler, jobs } = slotJobs(config, c, clock);
    const names = [...config.imageRepositories.keys()];
    assert.equal(names.length, 3);
    // Schedules far away: only the requests below run.
    scheduler.set(
      // A job's spec is an object with methods (repository.ts): overridden in place, not spread.
      names.map((n) =>
        Object.assign(jobs.spec(config.imageRepositories.get(n)!), { firstDelay: () => 3_600_000 }),
      ),
    );
    // The one scan slot is busy: every run the requests start waits for it.
    let free!: () => void;
    const busy = slots.run(() => new Promise<void>((resolve) => (free = resolve)));
    const done = names.map((n) => scheduler.request(repositoryJob(n)));
    await settle();
    assert.equal(scheduler.runningCount(), 3, 'three runs started, waiting for the slot');
    assert.equal(claims, 0, 'no lease claimed by a run without a scan slot');
    // The requests took the runs off their schedules; a run holds its timeout's timer once it has a slot.
    assert.equal(clock.pending(), 0, 'no timer held by a run without a scan slot');
    // A pass asking for a repository joins its waiting run rather than asking for one more.
    const joined = jobs.ensureScanned([{ repository: config.imageRepositories.get(names[0]!)!, since: 0 }]);
    await settle();
    assert.equal(scheduler.status(repositoryJob(names[0]!))!.queued, false, 'no follow-up run asked for');
    refuse = true;
    free();
    await busy;
    await Promise.all(done);
    await joined;
    assert.equal(claims, 3, 'each run claimed once it had the slot');
    assert.equal(
      scheduler.status(repositoryJob(names[0]!))!.runs,
      1,
      'the pass was served by the waiting run',
    );
    scheduler.stop();
  });
  test('a pass waiting on 5,000 repositories whose runs wait for a scan slot holds a record for each, no promise', async () => {
    const clock = new FakeClock();
    // Once the slot is free, another replica holds every lease: the runs scan nothing. The last
    // repository's claim waits until the test lets it answer.
    let answerLast!: () => void;
    const lastClaimed = new Promise<void>((resolve) => (answerLast = resolve));
    const c = coordinator({
      claim: async (key) => {
        if (key.endsWith('/app-4999')) await lastClaimed;
        return null;
      },
    });
    const template = [...config.imageRepositories.values()][0]!;
    const repos = Array.from({ length: 5_000 }, (_, i) =>
      Object.assign(Object.create(Object.getPrototypeOf(template) as object) as typeof template, template, {
        metadata: { ...template.metadata, name: `app-${i}` },
      }),
    );
    const many = {
      ...config,
      imageRepositories: new Map(repos.map((r) => [`${r.metadata.namespace}/${r.metadata.name}`, r])),
    };
    const { slots, scheduler, jobs } = slotJobs(many, c, clock);
    scheduler.set(repos.map((r) => Object.assign(jobs.spec(r), { firstDelay: () => 3_600_000 })));
    let free!: () => void;
    const busy = slots.run(() => new Promise<void>((resolve) => (free = resolve)));
    const wanted = repos.map((repository) => ({ repository, since: 0 }));
    gc();
    const before = process.memoryUsage().heapUsed;
    const joined = jobs.ensureScanned(wanted);
    await settle();
    gc();
    const held = process.memoryUsage().heapUsed - before;
    assert.equal(scheduler.runningCount(), 5_000, 'every run started, waiting for the slot');
    // ~230 bytes: the run's record, its place in the slots' queue, the pass's waiter. A chain of
    // promises and closures for each run waiting at its gate was ~1.8 KB under this runner
    // (whose async hooks give every promise properties of its own); with an async function
    // suspended for each repository, each run and each slot's wait, ~4.3 KB.
    assert.ok(held / 5_000 < 600, `${Math.round(held / 5_000)} bytes for each waiting repository`);
    let over = false;
    void joined.then(() => (over = true));
    free();
    await busy;
    await settle();
    assert.equal(scheduler.runningCount(), 1, "every run but the last one's ended");
    assert.equal(over, false, "the pass waits for the last repository's run");
    answerLast();
    await joined;
    assert.equal(scheduler.runningCount(), 0);
    scheduler.stop();
  });
});
