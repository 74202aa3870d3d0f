/**
 * `pawl serve --kubernetes` against a real kube-apiserver, a real registry and a real git
 * remote: Flux's objects applied with kubectl are scanned, selected and pushed, and their status
 * is what Flux's controllers write (kubectl wait, jsonpath). A broken object is reported on its
 * own status and the others carry on; `reconcile.fluxcd.io/requestedAt` (what `flux reconcile`
 * sets) runs the object now; a deleted object stops. Every interval is an hour: only what the
 * test does can have caused a run.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { fromKubeconfig } from '../../src/kube/index.js';
import { createServeLogger, Daemon } from '../../src/serve/index.js';
import { silentLogger } from '../../src/util/log.js';
import { applyDir, startKube, type TestKube } from '../helpers/kube.js';
import { pushTags } from '../helpers/push.js';
import { eventually } from '../helpers/serve.js';
import { gitObjects, imageObjects, startWorld, type World } from '../helpers/world.js';

const NS = 'flux-system';
// pawl's CRDs are installed too: Flux's kinds by their full names.
const REPO = 'imagerepositories.image.toolkit.fluxcd.io';
const POLICY = 'imagepolicies.image.toolkit.fluxcd.io';
const AUTO = 'imageupdateautomations.image.toolkit.fluxcd.io';
const DEPLOY = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    spec:
      containers:
        - name: app
          image: {{REGISTRY}}/team/app:1.0.0 # {"$imagepolicy": "flux-system:app"}
`;

let kube: TestKube;
let world: World;
let daemon: Daemon | undefined;
/** What notification-controller would receive (--events-addr), and who waits for it. */
const forwarded: FluxEvent[] = [];
const onForward = new Set<() => void>();
let events: Server;

interface FluxEvent {
  involvedObject: { kind: string; name: string; namespace: string; uid?: string };
  severity: string;
  reason: string;
  message: string;
  reportingController: string;
  timestamp: string;
}

function forwardedEvent(ok: (e: FluxEvent) => boolean): Promise<FluxEvent> {
  return new Promise((resolve) => {
    const check = () => {
      const hit = forwarded.find(ok);
      if (!hit) return;
      onForward.delete(check);
      resolve(hit);
    };
    onForward.add(check);
    check();
  });
}

interface Obj {
  metadata: { generation: number; annotations?: Record<string, string> };
  status?: Record<string, unknown> & {
    conditions?: { type: string; status: string; reason: string; message: string }[];
  };
}

async function get(resource: string, name: string): Promise<Obj> {
  const { stdout } = await kube.kubectl(['get', '-n', NS, resource, name, '-o', 'json']);
  return JSON.parse(stdout) as Obj;
}

const ready = (o: Obj) => o.status?.conditions?.find((c) => c.type === 'Ready');

before(async () => {
  events = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      forwarded.push(JSON.parse(body) as FluxEvent);
      res.writeHead(202).end();
      for (const w of onForward) w();
    });
  });
  await new Promise<void>((r) => events.listen(0, '127.0.0.1', r));
  kube = await startKube();
  world = await startWorld({
    files: { 'apps/app.yaml': DEPLOY },
    config: {
      'git.yaml': gitObjects().replace('interval: 5m', 'interval: 1h'),
      'app.yaml': imageObjects('app', '{{REGISTRY}}/team/app', 'semver:\n  range: ">=1.0.0 <2.0.0"', {
        interval: '1h',
      }),
    },
  });
  await pushTags(world.registry.url, 'team/app', ['1.0.0', '1.1.0']);
  await kube.kubectl(['create', 'namespace', NS]);
  // The objects exactly as the file tests use them, applied as a Flux user would.
  await applyDir(kube, world.configDir);
  daemon = await Daemon.start({
    configPaths: [],
    stateDir: world.stateDir,
    log: process.env.PAWL_TEST_LOG ? createServeLogger({ level: 'debug' }) : silentLogger,
    startSpreadMs: 0,
    kubernetes: {
      connection: fromKubeconfig(kube.kubeconfig),
      debounceMs: 20,
      eventsAddr: `http://127.0.0.1:${(events.address() as AddressInfo).port}/`,
    },
  });
});

after(async () => {
  await daemon?.shutdown(5000);
  await world?.close();
  await kube?.close();
  await new Promise((r) => events?.close(r));
});

test('scans, selects and pushes; status as Flux writes it, kubectl wait holds for each object', async () => {
  for (const r of [`${REPO}/app`, `${POLICY}/app`, `${AUTO}/fleet`])
    await kube.kubectl(['wait', '-n', NS, '--for=condition=Ready', r, '--timeout=120s']);
  const head = (await world.git.log(world.repoName, 'main'))[0]!;
  assert.match(await world.git.show(world.repoName, head.sha, 'apps/app.yaml'), /team\/app:1\.1\.0 #/);

  const repo = await get(REPO, 'app');
  assert.deepEqual(repo.status?.lastScanResult, {
    ...(repo.status?.lastScanResult as object),
    tagCount: 2,
    latestTags: ['1.1.0', '1.0.0'],
  });
  assert.equal(repo.status?.observedGeneration, 1);
  assert.equal(ready(repo)?.message, 'successful scan: found 2 tags');

  const tag = await kube.kubectl(['get', '-n', NS, POLICY, 'app', '-o', 'jsonpath={.status.latestRef.tag}']);
  assert.equal(tag.stdout, '1.1.0');

  // The status is written after the pass has recorded it: the push is there once Ready is.
  const auto = await eventually(async () => {
    const o = await get(AUTO, 'fleet');
    return o.status?.lastPushCommit === head.sha ? o : undefined;
  }, 'lastPushCommit is the commit on the remote');
  assert.match(ready(auto)?.message ?? '', /^pushed commit '[0-9a-f]{7}' to branch 'main'$/);
  assert.deepEqual(auto.status?.observedPolicies, {
    app: { name: `${world.registryHost}/team/app`, tag: '1.1.0' },
  });
  assert.equal(typeof auto.status?.lastAutomationRunTime, 'string');
  // The push, forwarded as image-automation-controller posts it to notification-controller.
  const pushed = await forwardedEvent((e) => e.involvedObject.kind === 'ImageUpdateAutomation');
  assert.equal(pushed.severity, 'info');
  assert.equal(pushed.reason, 'Succeeded');
  assert.equal(pushed.reportingController, 'image-automation-controller');
  assert.deepEqual(
    { ...pushed.involvedObject, uid: undefined },
    {
      ...pushed.involvedObject,
      kind: 'ImageUpdateAutomation',
      name: 'fleet',
      namespace: NS,
      uid: undefined,
    },
  );
  assert.match(pushed.message, new RegExp(`^pushed commit '${head.sha.slice(0, 7)}' to branch 'main'`));
  assert.match(pushed.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
});

test('a broken object is Ready=False on its own status; the others carry on', async () => {
  // In its own namespace: an automation that selects a broken policy is skipped with it.
  await kube.kubectl(['create', 'namespace', 'team-b']);
  await kube.kubectl(
    ['apply', '-f', '-'],
    `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: app, namespace: team-b}
spec: {image: ${world.registryHost}/team/app, interval: 1h}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: broken, namespace: team-b}
spec:
  imageRepositoryRef: {name: app}
  policy: {semver: {range: "not a range"}}
`,
  );
  const b = ['-n', 'team-b'];
  await kube.kubectl(['wait', ...b, '--for=condition=Ready=false', `${POLICY}/broken`, '--timeout=60s']);
  const { stdout } = await kube.kubectl(['get', ...b, POLICY, 'broken', '-o', 'json']);
  const broken = JSON.parse(stdout) as Obj;
  assert.equal(ready(broken)?.reason, 'InvalidPolicy');
  assert.match(ready(broken)?.message ?? '', /range/);
  assert.equal(broken.status?.conditions?.find((c) => c.type === 'Stalled')?.status, 'True');
  // Its repository, and the other namespace, run.
  await kube.kubectl(['wait', ...b, '--for=condition=Ready', `${REPO}/app`, '--timeout=60s']);
  assert.ok(daemon!.scheduler.has('ImageUpdateAutomation/flux-system/fleet'));
  assert.equal(ready(await get(POLICY, 'app'))?.status, 'True');
  const recorded = await kube.kubectl([
    'get',
    'events',
    ...b,
    '--field-selector',
    'involvedObject.name=broken,involvedObject.kind=ImagePolicy',
    '-o',
    'jsonpath={.items[*].reason}',
  ]);
  assert.equal(recorded.stdout, 'InvalidPolicy');
  const warned = await forwardedEvent((e) => e.involvedObject.name === 'broken');
  assert.equal(warned.severity, 'error');
  assert.equal(warned.reason, 'InvalidPolicy');
  await kube.kubectl(['delete', 'namespace', 'team-b', '--wait=false']);
});

test('reconcile.fluxcd.io/requestedAt scans now, pushes, and sets lastHandledReconcileAt', async () => {
  const before = await world.git.log(world.repoName, 'main');
  await pushTags(world.registry.url, 'team/app', ['1.2.0']);
  // As `flux reconcile image repository app` does.
  const at = new Date().toISOString();
  await kube.kubectl([
    'annotate',
    '--overwrite',
    '-n',
    NS,
    `${REPO}/app`,
    `reconcile.fluxcd.io/requestedAt=${at}`,
  ]);
  await kube.kubectl([
    'wait',
    '-n',
    NS,
    `--for=jsonpath={.status.lastHandledReconcileAt}=${at}`,
    `${REPO}/app`,
    '--timeout=60s',
  ]);
  assert.equal(ready(await get(REPO, 'app'))?.message, 'successful scan: found 3 tags');
  const head = await eventually(async () => {
    const log = await world.git.log(world.repoName, 'main');
    return log.length > before.length ? log[0] : undefined;
  }, 'the commit of 1.2.0');
  assert.match(await world.git.show(world.repoName, head!.sha, 'apps/app.yaml'), /team\/app:1\.2\.0 #/);
  await kube.kubectl([
    'wait',
    '-n',
    NS,
    '--for=jsonpath={.status.lastPushCommit}=' + head!.sha,
    `${AUTO}/fleet`,
    '--timeout=60s',
  ]);

  // `flux reconcile image update fleet`: a pass now, handled on the automation's status.
  const again = new Date(Date.now() + 1000).toISOString();
  await kube.kubectl([
    'annotate',
    '--overwrite',
    '-n',
    NS,
    `${AUTO}/fleet`,
    `reconcile.fluxcd.io/requestedAt=${again}`,
  ]);
  await kube.kubectl([
    'wait',
    '-n',
    NS,
    `--for=jsonpath={.status.lastHandledReconcileAt}=${again}`,
    `${AUTO}/fleet`,
    '--timeout=60s',
  ]);
  assert.equal(ready(await get(AUTO, 'fleet'))?.message, 'repository up-to-date');
});

test("a person's newer tag is kept: DowngradeBlocked Event and the reason in the policy's Ready message", async () => {
  await pushTags(world.registry.url, 'team/app', ['2.0.0']);
  const head = (await world.git.log(world.repoName, 'main'))[0]!;
  const content = await world.git.show(world.repoName, head.sha, 'apps/app.yaml');
  // 2.0.0 is outside the policy's range: the candidate stays 1.2.0, lower than the person's.
  await world.git.commitFiles(
    world.repoName,
    'main',
    { 'apps/app.yaml': content.replace(':1.2.0 #', ':2.0.0 #') },
    {
      message: 'hand-pick 2.0.0',
      from: head.sha,
    },
  );
  const at = new Date(Date.now() + 2000).toISOString();
  await kube.kubectl([
    'annotate',
    '--overwrite',
    '-n',
    NS,
    `${AUTO}/fleet`,
    `reconcile.fluxcd.io/requestedAt=${at}`,
  ]);
  await kube.kubectl([
    'wait',
    '-n',
    NS,
    `--for=jsonpath={.status.lastHandledReconcileAt}=${at}`,
    `${AUTO}/fleet`,
    '--timeout=60s',
  ]);
  const reason = await eventually(async () => {
    const { stdout } = await kube.kubectl([
      'get',
      'events',
      '-n',
      NS,
      '--field-selector',
      'involvedObject.name=app,involvedObject.kind=ImagePolicy,reason=DowngradeBlocked',
      '-o',
      'jsonpath={.items[*].message}',
    ]);
    return stdout || undefined;
  }, 'a DowngradeBlocked Event on the ImagePolicy');
  assert.match(reason, /^apps\/app\.yaml:\d+: Current \S*2\.0\.0 is newer than candidate \S*1\.2\.0\b/);
  const policy = await get(POLICY, 'app');
  assert.equal(policy.status?.latestRef && (policy.status.latestRef as { tag: string }).tag, '1.2.0');
  assert.match(ready(policy)?.message ?? '', /pawl's guard kept \S*2\.0\.0 \(downgrade-blocked: /);
  const file = await world.git.show(world.repoName, 'main', 'apps/app.yaml');
  assert.match(file, /team\/app:2\.0\.0 #/);
});

test('spec.suspend as `flux suspend image update` sets it: no pass until resumed', async () => {
  const key = 'ImageUpdateAutomation/flux-system/fleet';
  const suspend = (on: boolean) =>
    kube.kubectl([
      'patch',
      '-n',
      NS,
      `${AUTO}/fleet`,
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { suspend: on } }),
    ]);
  await suspend(true);
  await eventually(
    async () => (daemon!.scheduler.status(key)?.suspended ? true : undefined),
    'the job suspended',
  );
  const before = await world.git.log(world.repoName, 'main');
  const lastRun = (await get(AUTO, 'fleet')).status?.lastAutomationRunTime;
  // A reconcile of the repository now scans it alone: its automation is suspended.
  await pushTags(world.registry.url, 'team/app', ['1.3.0']);
  const at = new Date(Date.now() + 3000).toISOString();
  await kube.kubectl([
    'annotate',
    '--overwrite',
    '-n',
    NS,
    `${REPO}/app`,
    `reconcile.fluxcd.io/requestedAt=${at}`,
  ]);
  await kube.kubectl([
    'wait',
    '-n',
    NS,
    `--for=jsonpath={.status.lastHandledReconcileAt}=${at}`,
    `${REPO}/app`,
    '--timeout=60s',
  ]);
  assert.equal(ready(await get(REPO, 'app'))?.message, 'successful scan: found 5 tags');
  assert.equal((await get(AUTO, 'fleet')).status?.lastAutomationRunTime, lastRun);
  assert.equal((await world.git.log(world.repoName, 'main')).length, before.length);
  // Resumed: a pass at once (a changed spec runs now), and its status written.
  const resumedAt = Date.now();
  await suspend(false);
  const pass = await eventually(async () => {
    const p = daemon!.view.lastPass.get('flux-system/fleet');
    return p && p.startedAt.getTime() >= resumedAt ? p : undefined;
  }, 'a pass after resume');
  await kube.kubectl([
    'wait',
    '-n',
    NS,
    `--for=jsonpath={.status.lastAutomationRunTime}=${pass.endedAt.toISOString().replace(/\.\d{3}Z$/, 'Z')}`,
    `${AUTO}/fleet`,
    '--timeout=60s',
  ]);
});

test('a deleted object stops; one created while running starts', async () => {
  await kube.kubectl(['delete', '-n', NS, `${AUTO}/fleet`]);
  await eventually(
    async () => (daemon!.scheduler.has('ImageUpdateAutomation/flux-system/fleet') ? undefined : true),
    'the automation job removed',
  );
  assert.ok(daemon!.scheduler.has('ImageRepository/flux-system/app'));
  await kube.kubectl(
    ['apply', '-f', '-'],
    `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: other, namespace: ${NS}}
spec: {image: ${world.registryHost}/team/app, interval: 1h}
`,
  );
  await kube.kubectl(['wait', '-n', NS, '--for=condition=Ready', `${REPO}/other`, '--timeout=60s']);
});
