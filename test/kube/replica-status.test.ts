/**
 * Replicas on PostgreSQL in Kubernetes mode: the status of a scan or a pass is written by the
 * replica that ran it, whichever is the job's preferred owner. A request (`requestedAt`, a
 * changed spec, a webhook, and the scans a pass asks for through the repositories' jobs) claims
 * the job's lease on whichever replica asks first; the preferred owner, finding the lease held,
 * waits for its next interval. So the replica that ran it must write the status, or no one does
 * for an interval (an hour here).
 *
 * One in-process daemon stands for the replica that wins the claims: its coordinator grants
 * every claim (as PostgreSQL does for a key no one holds) but says another replica is the
 * preferred owner of every job and of the objects left out (`''`), so its runs on schedule are
 * all skipped and only the requested reconcile runs here.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fromKubeconfig } from '../../src/kube/index.js';
import { LocalCoordinator } from '../../src/serve/cluster/index.js';
import { createServeLogger, Daemon } from '../../src/serve/index.js';
import { silentLogger } from '../../src/util/log.js';
import {
  applyDir,
  FLUX,
  getObject,
  readyOf,
  reconcileNow,
  startKube,
  type TestKube,
} from '../helpers/kube.js';
import { pushTags } from '../helpers/push.js';
import { eventually } from '../helpers/serve.js';
import { gitObjects, imageObjects, startWorld, type World } from '../helpers/world.js';

const NS = 'flux-system';

/** Another replica is the preferred owner of everything; this one's claims are granted. */
class PeerOwnsEverything extends LocalCoordinator {
  override owns(): boolean {
    return false;
  }
}

let kube: TestKube;
let world: World;
let daemon: Daemon | undefined;

before(async () => {
  kube = await startKube();
  world = await startWorld({
    files: { 'apps/app.yaml': 'image: {{REGISTRY}}/team/app:1.0.0 # {"$imagepolicy": "flux-system:app"}\n' },
    config: {
      'git.yaml': gitObjects().replace('interval: 5m', 'interval: 1h'),
      'app.yaml': imageObjects('app', '{{REGISTRY}}/team/app', 'semver:\n  range: ">=1.0.0"', {
        interval: '1h',
      }),
    },
  });
  await pushTags(world.registry.url, 'team/app', ['1.0.0', '1.1.0']);
  await kube.kubectl(['create', 'namespace', NS]);
  await applyDir(kube, world.configDir);
});

after(async () => {
  await daemon?.shutdown(5000);
  await world?.close();
  await kube?.close();
});

test('the replica that ran a requested pass, and the scan it asked for, writes their status', async () => {
  daemon = await Daemon.start({
    configPaths: [],
    stateDir: world.stateDir,
    log: process.env.PAWL_TEST_LOG ? createServeLogger({ level: 'debug' }) : silentLogger,
    startSpreadMs: 0,
    coordinator: new PeerOwnsEverything(),
    kubernetes: { connection: fromKubeconfig(kube.kubeconfig), debounceMs: 20 },
  });
  const d = daemon;
  const scans: string[] = [];
  d.events.onScan((e) => scans.push(`${e.trigger} ${e.report.name}`));
  const jobs = [`ImageRepository/${NS}/app`, `ImageUpdateAutomation/${NS}/fleet`];
  // Both first runs were the peer's: skipped here, the next an hour away.
  await eventually(
    async () => (jobs.every((k) => d.scheduler.status(k)?.skips === 1) ? true : undefined),
    'both scheduled runs skipped',
  );
  // `flux reconcile image update fleet`: the pass runs here and scans the repository it needs
  // through the repository's job; its status shows the reconcile handled (reconcileNow waits).
  await reconcileNow(kube, NS, `${FLUX.automation}/fleet`);
  assert.deepEqual(scans, [`request ${NS}/app`]);
  const automation = await getObject(kube, NS, FLUX.automation, 'fleet');
  assert.equal(typeof automation.status?.lastPushCommit, 'string', JSON.stringify(automation.status));
  // Stopping waits for every status write queued: what this replica writes is on the server now.
  await d.shutdown(5000);
  daemon = undefined;
  const repo = await getObject(kube, NS, FLUX.repository, 'app');
  assert.equal(readyOf(repo)?.status, 'True', JSON.stringify(repo.status));
  assert.equal((repo.status?.lastScanResult as { tagCount?: number } | undefined)?.tagCount, 2);
  const policy = await getObject(kube, NS, FLUX.policy, 'app');
  assert.deepEqual(policy.status?.latestRef, { name: `${world.registryHost}/team/app`, tag: '1.1.0' });
});
