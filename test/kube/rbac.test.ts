/**
 * The overlay's RBAC is enough, under a real authorizer: the API server runs with
 * `--authorization-mode RBAC`, deploy/kubernetes/overlays/kubernetes-mode is applied as shipped
 * (`kubectl apply -k`), and `pawl serve --kubernetes --enable-leader-election` (the CLI) runs as
 * its ServiceAccount, with a token from the TokenRequest API as a Pod's. It scans, pushes, writes
 * status, creates Events and takes its Lease; what RBAC does not grant it (a spec) is refused.
 * It runs with `--watch-namespace` and `--watch-label-selector`: objects outside them are never
 * read, and never get a status. Every interval is an hour: only what the test does causes a run.
 */
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { after, before, test } from 'node:test';
import {
  apply,
  applyDir,
  eventsOn,
  FLUX,
  getObject,
  readyOf,
  reconcileNow,
  serviceAccountKubeconfig,
  startKube,
  waitFor,
  type TestKube,
} from '../helpers/kube.js';
import { pushTags } from '../helpers/push.js';
import { startServe, type ServeProcess } from '../helpers/serve.js';
import { gitObjects, imageObjects, startWorld, type World } from '../helpers/world.js';

const NS = 'flux-system';
const OVERLAY = resolve(
  import.meta.dirname,
  '..',
  '..',
  'deploy',
  'kubernetes',
  'overlays',
  'kubernetes-mode',
);
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

let kube: TestKube;
let world: World;
let pawl: ServeProcess | undefined;
let asPawl: string;

/** An ImageRepository and a policy on it; `labels` as the label selector sees them. */
const pair = (
  ns: string,
  name: string,
  image: string,
  labels: string,
) => `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: ${name}, namespace: ${ns}, labels: {${labels}}}
spec: {image: ${image}, interval: 1h}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: ${name}, namespace: ${ns}, labels: {${labels}}}
spec:
  imageRepositoryRef: {name: ${name}}
  policy: {semver: {range: ">=1.0.0"}}
`;

before(async () => {
  kube = await startKube({ rbac: true });
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
  for (const ns of [NS, 'outside']) await kube.kubectl(['create', 'namespace', ns]);
  await applyDir(kube, world.configDir);
  // The label selector's side: pawl's objects carry team=web.
  for (const o of [`${FLUX.repository}/app`, `${FLUX.policy}/app`, `${FLUX.automation}/fleet`])
    await kube.kubectl(['label', '-n', NS, o, 'team=web']);
  const image = `${world.registryHost}/team/app`;
  await apply(kube, pair('outside', 'app', image, 'team: web'));
  await apply(kube, pair(NS, 'unlabelled', image, 'team: other'));
  // The overlay as shipped: its namespace, ServiceAccount, ClusterRole, Role and bindings (and its
  // Deployment, which no kubelet here runs).
  await kube.kubectl(['create', 'namespace', 'pawl']);
  await kube.kubectl(['apply', '-k', OVERLAY]);
  asPawl = await serviceAccountKubeconfig(kube, 'pawl', 'pawl');
});

after(async () => {
  await pawl?.stop();
  await world?.close();
  await kube?.close();
});

const can = async (verb: string, what: string, ns: string, subresource?: string) =>
  (
    await kube
      .kubectl([
        '--kubeconfig',
        asPawl,
        'auth',
        'can-i',
        verb,
        what,
        '-n',
        ns,
        ...(subresource ? [`--subresource=${subresource}`] : []),
      ])
      .catch((err: { stdout: string }) => err)
  ).stdout.trim();

test('the authorizer is real: the ServiceAccount may patch status, not spec', async () => {
  assert.equal(await can('patch', FLUX.policy, NS, 'status'), 'yes');
  assert.equal(await can('patch', FLUX.policy, NS), 'no');
  assert.equal(await can('create', 'events', NS), 'yes');
  assert.equal(await can('delete', 'secrets', NS), 'no');
  assert.equal(await can('update', 'leases.coordination.k8s.io', 'pawl'), 'yes');
  assert.equal(await can('update', 'leases.coordination.k8s.io', NS), 'no');
});

test("pawl serve --kubernetes as the overlay's ServiceAccount: status, Events, Lease, a push", async () => {
  pawl = await startServe({
    stateDir: world.stateDir,
    args: [
      '--kubernetes',
      '--kubeconfig',
      asPawl,
      '--enable-leader-election',
      '--watch-namespace',
      NS,
      '--watch-label-selector',
      'team=web',
    ],
  });
  await pawl.waitForLog((r) => r.msg === 'leading', 'pawl leads');
  // The Lease in the ServiceAccount's namespace, where the overlay's Role allows it.
  const { stdout } = await kube.kubectl(['get', 'lease', '-n', 'pawl', 'pawl-leader-election', '-o', 'json']);
  assert.ok((JSON.parse(stdout) as { spec: { holderIdentity?: string } }).spec.holderIdentity);

  for (const r of [`${FLUX.repository}/app`, `${FLUX.policy}/app`, `${FLUX.automation}/fleet`])
    await waitFor(kube, NS, r, 'condition=Ready', '120s');
  assert.match(await world.git.show(world.repoName, 'main', 'apps/app.yaml'), /team\/app:1\.1\.0 #/);
  await waitFor(kube, NS, `${FLUX.automation}/fleet`, 'jsonpath={.status.lastPushCommit}');
  assert.deepEqual(await eventsOn(kube, NS, 'ImageUpdateAutomation', 'fleet'), ['Succeeded']);
  // Nothing was refused on the way.
  assert.equal(
    pawl.records().filter((r) => /forbidden|cannot (write|record|list)/i.test(JSON.stringify(r))).length,
    0,
  );
});

test('--watch-namespace and --watch-label-selector: objects outside are never read or written', async () => {
  // A run asked of every object: only those inside answer it.
  await reconcileNow(kube, NS, `${FLUX.repository}/app`, 1000);
  for (const [ns, name] of [
    ['outside', 'app'],
    [NS, 'unlabelled'],
  ] as const) {
    const at = new Date(Date.now() + 2000).toISOString();
    await kube.kubectl([
      'annotate',
      '-n',
      ns,
      `${FLUX.repository}/${name}`,
      `reconcile.fluxcd.io/requestedAt=${at}`,
    ]);
  }
  // Handled after those annotations: had pawl seen them, it would have handled them by now.
  await reconcileNow(kube, NS, `${FLUX.automation}/fleet`, 3000);
  assert.equal(readyOf(await getObject(kube, NS, FLUX.automation, 'fleet'))?.status, 'True');
  for (const [ns, name] of [
    ['outside', 'app'],
    [NS, 'unlabelled'],
  ] as const) {
    for (const kind of [FLUX.repository, FLUX.policy]) {
      // Only what the CRD's schema defaults (observedGeneration -1): nothing pawl writes.
      const status = (await getObject(kube, ns, kind, name)).status ?? {};
      assert.deepEqual(
        { ...status, observedGeneration: undefined },
        { observedGeneration: undefined },
        `${ns}/${name}`,
      );
      assert.ok(((status.observedGeneration as number | undefined) ?? -1) <= 0, `${kind} ${ns}/${name}`);
    }
    assert.deepEqual(await eventsOn(kube, ns, 'ImageRepository', name), []);
  }
  const serving = pawl!.records().find((r) => r.msg === 'serving');
  assert.equal(serving?.repositories, 1);
  assert.equal(serving?.policies, 1);
});
