/**
 * Replicas on PostgreSQL in Kubernetes mode: the status of a scan is written by the replica that
 * ran it, whichever is the repository's preferred owner. An automation's pass asks for the scans
 * it needs through the repositories' jobs (reconcile through), and such a request claims the
 * job's lease on any replica: when the pass's replica wins it, the owner's own scheduled run
 * finds the lease held and waits for its next interval. So the replica that scanned must write
 * the ImageRepository's status, or no one does for an interval (an hour here).
 *
 * One in-process daemon stands for the replica that runs the pass: its coordinator grants every
 * claim (as PostgreSQL does for a key no one holds) but says another replica is the preferred
 * owner of every job except the automation, and of the objects left out (`''`).
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fromKubeconfig } from '../../src/kube/index.js';
import { LocalCoordinator } from '../../src/serve/cluster/index.js';
import { createServeLogger, Daemon, type PassEvent } from '../../src/serve/index.js';
import { silentLogger } from '../../src/util/log.js';
import { apply, FLUX, getObject, readyOf, startKube, waitFor, type TestKube } from '../helpers/kube.js';
import { pushTags } from '../helpers/push.js';
import { gitObjects, imageObjects, startWorld, type World } from '../helpers/world.js';

const NS = 'flux-system';

/** This replica is the preferred owner of the automations only; the peer of everything else. */
class PeerOwnsRepositories extends LocalCoordinator {
  override owns(key: string): boolean {
    return key.startsWith('ImageUpdateAutomation/');
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
  for (const f of await readdir(world.configDir))
    await apply(kube, await readFile(join(world.configDir, f), 'utf8'));
});

after(async () => {
  await daemon?.shutdown(5000);
  await world?.close();
  await kube?.close();
});

test('a replica that scans a repository another replica owns writes its status', async () => {
  const coordinator = new PeerOwnsRepositories();
  daemon = await Daemon.start({
    configPaths: [],
    stateDir: world.stateDir,
    log: process.env.PAWL_TEST_LOG ? createServeLogger({ level: 'debug' }) : silentLogger,
    startSpreadMs: 0,
    coordinator,
    kubernetes: { connection: fromKubeconfig(kube.kubeconfig), debounceMs: 20 },
  });
  const scans: string[] = [];
  daemon.events.onScan((e) => scans.push(`${e.trigger} ${e.report.name}`));
  const pushed = new Promise<PassEvent>((resolve) =>
    daemon!.events.onReport((e) => {
      if (e.report.automations[0]?.result === 'pushed') resolve(e);
    }),
  );
  await pushed;
  await waitFor(kube, NS, `${FLUX.automation}/fleet`, 'jsonpath={.status.lastPushCommit}');
  // The repository's own run on its interval was the peer's; the pass's request scanned it here.
  assert.deepEqual(scans, [`request ${NS}/app`]);
  assert.equal(daemon.scheduler.status(`ImageRepository/${NS}/app`)?.skips, 1);
  // Stopping waits for every status write queued: what this replica writes is on the server now.
  await daemon.shutdown(5000);
  daemon = undefined;
  const repo = await getObject(kube, NS, FLUX.repository, 'app');
  assert.equal(readyOf(repo)?.status, 'True', JSON.stringify(repo.status));
  assert.equal((repo.status?.lastScanResult as { tagCount?: number } | undefined)?.tagCount, 2);
});
