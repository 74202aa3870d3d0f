/**
 * Kubernetes mode's replicas: `pawl serve --kubernetes --enable-leader-election` elects a leader
 * with a coordination.k8s.io Lease on the real API server. One acts (scans, pushes, writes
 * status); the other only watches. `kill -9` of the leader: the other takes the Lease over once
 * it has run out, runs every job, and pushes what the dead one left — one commit, not two.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fromKubeconfig, KubeClient, LeaseElector, type LeaseClock } from '../../src/kube/index.js';
import { Daemon } from '../../src/serve/index.js';
import { silentLogger } from '../../src/util/log.js';
import { applyDir, startKube, type TestKube } from '../helpers/kube.js';
import { pushTags } from '../helpers/push.js';
import { eventually, startServe, type ServeProcess } from '../helpers/serve.js';
import { gitObjects, imageObjects, startWorld, type World } from '../helpers/world.js';

const NS = 'flux-system';
const DEPLOY = `apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  template:
    spec:
      containers:
        - name: app
          image: {{REGISTRY}}/team/app:1.0.0 # {"$imagepolicy": "flux-system:app"}
`;
const ELECTION = { leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 100 };

let kube: TestKube;
let world: World;
let leader: ServeProcess | undefined;
let follower: Daemon | undefined;
let followerState: string;

interface LeaseObj {
  spec: { holderIdentity?: string; leaseTransitions?: number };
}

async function lease(): Promise<LeaseObj | undefined> {
  try {
    const { stdout } = await kube.kubectl([
      'get',
      'lease',
      '-n',
      'default',
      'pawl-leader-election',
      '-o',
      'json',
    ]);
    return JSON.parse(stdout) as LeaseObj;
  } catch {
    return undefined;
  }
}

before(async () => {
  kube = await startKube();
  world = await startWorld({
    files: { 'apps/app.yaml': DEPLOY },
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
  followerState = await mkdtemp(join(tmpdir(), 'pawl-follower-'));
});

after(async () => {
  await leader?.stop('SIGKILL');
  await follower?.shutdown(5000);
  await rm(followerState, { recursive: true, force: true });
  await world?.close();
  await kube?.close();
});

test('one replica acts; after kill -9 of the leader the other takes over; nothing doubled', async () => {
  // The CLI as a user runs it; the first to start takes the Lease.
  leader = await startServe({
    stateDir: world.stateDir,
    // The base Deployment sets PAWL_CONFIG; --kubernetes overrides it (only -c with it is refused).
    env: { PAWL_CONFIG: world.configDir },
    args: [
      '--kubernetes',
      '--kubeconfig',
      kube.kubeconfig,
      '--enable-leader-election',
      '--leader-election-lease-duration',
      '2s',
      '--leader-election-renew-deadline',
      '1500ms',
      '--leader-election-retry-period',
      '100ms',
    ],
  });
  await leader.waitForLog((r) => r.msg === 'leading', 'the first replica leads');
  await leader.waitForLog((r) => r.msg === 'pass' && r.result === 'pushed', "the leader's push of 1.1.0");
  const afterFirst = await world.git.log(world.repoName, 'main');

  follower = await Daemon.start({
    configPaths: [],
    stateDir: followerState,
    log: silentLogger,
    startSpreadMs: 0,
    kubernetes: {
      connection: fromKubeconfig(kube.kubeconfig),
      debounceMs: 20,
      leaderElection: { ...ELECTION, identity: 'follower' },
    },
  });
  const key = 'ImageUpdateAutomation/flux-system/fleet';
  // Its first runs, at start, are not its own while another leads: skipped, nothing pushed.
  await eventually(
    async () => (follower!.view.skipped(key) !== null ? true : undefined),
    "the follower's pass skipped",
  );
  assert.equal(follower.view.lastPass.get('flux-system/fleet'), undefined);
  assert.notEqual((await lease())?.spec.holderIdentity, 'follower');

  await pushTags(world.registry.url, 'team/app', ['1.2.0']);
  leader.child.kill('SIGKILL');
  await leader.exited;
  // The Lease runs out; the follower takes it and runs every job, scanning 1.2.0.
  const taken = await eventually(async () => {
    const l = await lease();
    return l?.spec.holderIdentity === 'follower' ? l : undefined;
  }, 'the follower holds the Lease');
  assert.equal(taken.spec.leaseTransitions, 1);
  const head = await eventually(async () => {
    const log = await world.git.log(world.repoName, 'main');
    return log.length > afterFirst.length ? log : undefined;
  }, 'the commit of 1.2.0 by the new leader');
  assert.equal(head.length, afterFirst.length + 1);
  assert.match(await world.git.show(world.repoName, head[0]!.sha, 'apps/app.yaml'), /team\/app:1\.2\.0 #/);
  await kube.kubectl([
    'wait',
    '-n',
    NS,
    `--for=jsonpath={.status.lastPushCommit}=${head[0]!.sha}`,
    'imageupdateautomations.image.toolkit.fluxcd.io/fleet',
    '--timeout=60s',
  ]);
});

test('the elector on an injected clock: a Lease renewed by another is not taken; one given up is at once', async () => {
  let now = 1_000_000;
  const sleeps: (() => void)[] = [];
  const clock: LeaseClock = {
    now: () => now,
    sleep: (_ms, signal) =>
      new Promise((resolve) => {
        const wake = () => {
          signal.removeEventListener('abort', wake);
          const i = sleeps.indexOf(wake);
          if (i >= 0) sleeps.splice(i, 1);
          resolve();
        };
        sleeps.push(wake);
        signal.addEventListener('abort', wake, { once: true });
      }),
  };
  /** Lets the elector asleep longest run one period, and waits until it sleeps again. */
  const tick = async (advance: number) => {
    now += advance;
    const n = sleeps.length;
    sleeps[0]?.();
    await eventually(async () => (sleeps.length === n ? true : undefined), 'the elector sleeps again');
  };
  const client = new KubeClient(fromKubeconfig(kube.kubeconfig));
  const changes: string[] = [];
  const mk = (identity: string) =>
    new LeaseElector({
      client,
      namespace: 'default',
      name: 'clocked',
      identity,
      leaseDurationMs: 10_000,
      renewDeadlineMs: 8_000,
      retryPeriodMs: 1_000,
      clock,
      onChange: (leading) => changes.push(`${identity}:${leading}`),
    });
  const a = mk('a');
  a.start();
  await eventually(async () => (sleeps.length > 0 ? true : undefined), 'a tried once');
  assert.deepEqual(changes, ['a:true']);
  const b = mk('b');
  b.start();
  await eventually(async () => (sleeps.length > 1 ? true : undefined), 'b tried once');
  // a renews every period; b sees a renewTime that keeps moving and never takes over.
  for (let i = 0; i < 30; i++) await tick(500);
  assert.deepEqual(changes, ['a:true']);
  await a.stop();
  assert.deepEqual(changes, ['a:true', 'a:false']);
  // a gave it up (empty holder): b takes it at its next try, without waiting the lease out.
  await tick(1);
  await eventually(async () => (b.leading ? true : undefined), 'b leads');
  assert.deepEqual(changes, ['a:true', 'a:false', 'b:true']);
  await b.stop();
  await client.close();
});
