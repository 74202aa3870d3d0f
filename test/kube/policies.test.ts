/**
 * ImagePolicies in Kubernetes mode against a real kube-apiserver, a real registry (behind the
 * test proxy, which can serve a stale tag list) and a real git remote: a stale list the guard
 * refuses is a `StaleTagList` Event on the policy, and a policy no automation uses still gets
 * the `latestRef` and Ready that image-reflector-controller writes for every policy. Every
 * interval is an hour: only what the test does causes a run.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fromKubeconfig } from '../../src/kube/index.js';
import { createServeLogger, Daemon } from '../../src/serve/index.js';
import { silentLogger } from '../../src/util/log.js';
import {
  apply,
  applyDir,
  eventsOn,
  FLUX,
  getObject,
  readyOf,
  reconcileNow,
  startKube,
  waitFor,
  type TestKube,
} from '../helpers/kube.js';
import { pushTags } from '../helpers/push.js';
import { eventually } from '../helpers/serve.js';
import { gitObjects, imageObjects, startWorld, type World } from '../helpers/world.js';

const NS = 'flux-system';
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

before(async () => {
  kube = await startKube();
  world = await startWorld({
    proxy: true,
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
  daemon = await Daemon.start({
    configPaths: [],
    stateDir: world.stateDir,
    log: process.env.PAWL_TEST_LOG ? createServeLogger({ level: 'debug' }) : silentLogger,
    startSpreadMs: 0,
    kubernetes: { connection: fromKubeconfig(kube.kubeconfig), debounceMs: 20 },
  });
  await waitFor(kube, NS, `${FLUX.automation}/fleet`, 'jsonpath={.status.lastPushCommit}', '120s');
});

after(async () => {
  await daemon?.shutdown(5000);
  await world?.close();
  await kube?.close();
});

test('a stale tag list the guard refuses: a StaleTagList Event on the policy, once, and the mark kept', async () => {
  assert.match(await world.git.show(world.repoName, 'main', 'apps/app.yaml'), /team\/app:1\.1\.0 #/);
  const before = await world.git.log(world.repoName, 'main');
  // The registry answers with last week's list: 1.1.0, the high-water mark, is missing from it
  // but still there (its manifest answers).
  world.proxy!.setTagList('team/app', ['1.0.0']);
  await reconcileNow(kube, NS, `${FLUX.repository}/app`, 1000);
  const messages = await eventually(async () => {
    const m = await eventsOn(kube, NS, 'ImagePolicy', 'app', 'message', 'StaleTagList');
    return m.length > 0 ? m : undefined;
  }, 'a StaleTagList Event on the ImagePolicy');
  assert.equal(
    messages[0],
    'Stale tag list: the scan selected 1.0.0, older than 1.1.0, which still exists; kept 1.1.0.',
  );
  const policy = await getObject(kube, NS, FLUX.policy, 'app');
  assert.equal((policy.status?.latestRef as { tag: string }).tag, '1.1.0');
  assert.equal(readyOf(policy)?.status, 'True');

  // The same stale list again is the same episode: no second Event. The automation's status is
  // written after its policies' status and Events of the same pass.
  await reconcileNow(kube, NS, `${FLUX.automation}/fleet`, 3000);
  assert.equal((await eventsOn(kube, NS, 'ImagePolicy', 'app', 'reason', 'StaleTagList')).length, 1);
  assert.deepEqual(await world.git.log(world.repoName, 'main'), before);
  assert.match(await world.git.show(world.repoName, 'main', 'apps/app.yaml'), /team\/app:1\.1\.0 #/);
  world.proxy!.setTagList('team/app', null);
});

test('a policy no automation uses gets latestRef and Ready, as image-reflector-controller writes', async () => {
  // Its own namespace: the automation in flux-system selects only its namespace's policies.
  await kube.kubectl(['create', 'namespace', 'team-c']);
  await apply(
    kube,
    `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: app, namespace: team-c}
spec: {image: ${world.registryHost}/team/app, interval: 1h}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: one-x, namespace: team-c}
spec:
  imageRepositoryRef: {name: app}
  policy: {semver: {range: "1.x"}}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: none, namespace: team-c}
spec:
  imageRepositoryRef: {name: app}
  policy: {semver: {range: ">=9.0.0"}}
`,
  );
  const c = 'team-c';
  await waitFor(kube, c, `${FLUX.policy}/one-x`, 'condition=Ready');
  const p = await getObject(kube, c, FLUX.policy, 'one-x');
  assert.deepEqual(p.status?.latestRef, { name: `${world.registryHost}/team/app`, tag: '1.1.0' });
  assert.equal(readyOf(p)?.message, `Latest image tag for ${world.registryHost}/team/app resolved to 1.1.0`);
  assert.equal(p.status?.observedGeneration, 1);
  // Nothing matches: Ready=False with the selection's words, as for a used policy.
  await waitFor(kube, c, `${FLUX.policy}/none`, 'condition=Ready=false');
  const none = readyOf(await getObject(kube, c, FLUX.policy, 'none'));
  assert.equal(none?.reason, 'Failure');

  // A new tag, scanned: latestRef moves, and the previous ref is kept, as Flux does.
  await pushTags(world.registry.url, 'team/app', ['1.2.0']);
  await reconcileNow(kube, c, `${FLUX.repository}/app`, 4000);
  await waitFor(kube, c, `${FLUX.policy}/one-x`, 'jsonpath={.status.latestRef.tag}=1.2.0');
  const moved = await getObject(kube, c, FLUX.policy, 'one-x');
  assert.deepEqual(moved.status?.observedPreviousRef, {
    name: `${world.registryHost}/team/app`,
    tag: '1.1.0',
  });
  // No automation uses it: nothing was pushed for it.
  assert.match(await world.git.show(world.repoName, 'main', 'apps/app.yaml'), /team\/app:1\.1\.0 #/);

  // A policy that comes after its repository, and one whose spec changes, are evaluated from
  // the last scan at once, as image-reflector-controller reconciles a changed policy: not at the
  // repository's next scan, an hour away.
  await apply(
    kube,
    `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: later, namespace: team-c}
spec:
  imageRepositoryRef: {name: app}
  policy: {semver: {range: "1.1.x"}}
`,
  );
  await kube.kubectl([
    'patch',
    '-n',
    c,
    `${FLUX.policy}/none`,
    '--type=merge',
    '-p',
    '{"spec":{"policy":{"semver":{"range":">=1.0.0"}}}}',
  ]);
  await waitFor(kube, c, `${FLUX.policy}/later`, 'jsonpath={.status.latestRef.tag}=1.1.0');
  await waitFor(kube, c, `${FLUX.policy}/none`, 'jsonpath={.status.latestRef.tag}=1.2.0');
  assert.equal(readyOf(await getObject(kube, c, FLUX.policy, 'none'))?.status, 'True');
});
