/**
 * How the daemon turns its coordinator's wake-ups into runs (daemon.ts #subscribe), in-process:
 * a job failing with its own backoff is not hurried by a sweep, but is run at once for work
 * queued for it and when the database returns. The only job scans a registry port nothing
 * listens on, so it fails at once; each step reads the scheduler right after the wake-up,
 * which asks for a run synchronously or not at all.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalCoordinator, type Coordinator, type WorkSource } from '../../src/serve/cluster/index.js';
import { Daemon, repositoryJob } from '../../src/serve/index.js';
import { silentLogger } from '../../src/util/index.js';
import { eventually } from '../helpers/serve.js';

const KEY = repositoryJob('apps/app');
let dir: string;
let daemon: Daemon | undefined;
const onWork: ((key: string, source: WorkSource) => void)[] = [];
const onRecovered: (() => void)[] = [];

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pawl-daemon-wake-'));
  await writeFile(
    join(dir, 'app.yaml'),
    `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: app, namespace: apps}
spec:
  image: 127.0.0.1:1/team/app
  interval: 1h
`,
  );
});
after(async () => {
  await daemon?.shutdown(5_000);
  await rm(dir, { recursive: true, force: true });
});

/** The local coordinator, with its wake-ups in the test's hands. */
function coordinator(): Coordinator {
  const local = new LocalCoordinator();
  return new Proxy(local, {
    get(target, prop, receiver) {
      if (prop === 'onWork')
        return (cb: (key: string, source: WorkSource) => void) => {
          onWork.push(cb);
          return target.onWork(cb);
        };
      if (prop === 'onRecovered')
        return (cb: () => void) => {
          onRecovered.push(cb);
          return (target as Coordinator).onRecovered(cb);
        };
      const v = Reflect.get(target, prop, receiver) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

const status = () => daemon!.scheduler.status(KEY)!;
const failedAndIdle = (runs: number) =>
  eventually(async () => {
    const s = status();
    return s.runs >= runs && !s.running && s.failures >= 1 ? true : undefined;
  }, `run ${runs} failed and ended`);

test('a failing job: a sweep leaves it to its backoff; queued work and the database returning run it at once', async () => {
  daemon = await Daemon.start({
    configPaths: [dir],
    stateDir: join(dir, 'state'),
    log: silentLogger,
    watch: false,
    startSpreadMs: 0,
    coordinator: coordinator(),
  });
  assert.equal(onWork.length, 1);
  assert.equal(onRecovered.length, 1);
  await failedAndIdle(1);
  assert.ok(status().nextAt !== null, 'its retry is scheduled with backoff');

  // Its own retry may have run meanwhile: count from here.
  const runs = status().runs;
  onWork[0]!(KEY, 'sweep');
  assert.equal(status().running, false, 'a sweep does not hurry a failing job past its backoff');
  assert.equal(status().runs, runs);

  onWork[0]!(KEY, 'notify');
  assert.equal(status().running, true, 'work queued for it runs it at once');
  await failedAndIdle(runs + 1);

  onRecovered[0]!();
  assert.equal(status().running, true, 'the database returned: the failing job runs at once');
  await failedAndIdle(runs + 2);
});
