/**
 * Provider and Alert objects read from a real kube-apiserver feed pawl's alerts (docs/alerts.md),
 * delivered to a real HTTP receiver: the Provider's address and HMAC token come from its Secret
 * in the cluster. The run is started by `reconcile.fluxcd.io/requestedAt` patched the way
 * notification-controller's Receivers patch it (a JSON merge patch of the annotation, RFC 3339
 * with nanoseconds). Every interval is an hour: only what the test does causes a run.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fromKubeconfig } from '../../src/kube/index.js';
import { createServeLogger, Daemon } from '../../src/serve/index.js';
import { silentLogger } from '../../src/util/log.js';
import { apply, applyDir, FLUX, startKube, waitFor, type TestKube } from '../helpers/kube.js';
import { pushTags } from '../helpers/push.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { gitObjects, imageObjects, startWorld, type World } from '../helpers/world.js';

const NS = 'flux-system';
const HMAC_TOKEN = 'kube-alerts-hmac-token-0123456789';
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

const notifications = (address: string) => `apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata: {name: hook, namespace: ${NS}}
spec:
  type: generic-hmac
  secretRef: {name: hook-secret}
---
apiVersion: v1
kind: Secret
metadata: {name: hook-secret, namespace: ${NS}}
stringData:
  address: ${address}
  token: ${HMAC_TOKEN}
---
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata: {name: images, namespace: ${NS}}
spec:
  providerRef: {name: hook}
  eventSeverity: info
  eventSources:
    - {kind: ImageUpdateAutomation, name: '*'}
`;

interface Body {
  involvedObject: { kind: string; namespace: string; name: string };
  severity: string;
  reason: string;
  message: string;
}

let kube: TestKube;
let world: World;
let receiver: Receiver;
let daemon: Daemon | undefined;

before(async () => {
  receiver = await startReceiver({ token: HMAC_TOKEN });
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
  await apply(kube, notifications(receiver.url));
  await applyDir(kube, world.configDir);
  // No --events-addr: no notification-controller is there to deliver the Alerts, so pawl does.
  daemon = await Daemon.start({
    configPaths: [],
    stateDir: world.stateDir,
    log: process.env.PAWL_TEST_LOG ? createServeLogger({ level: 'debug' }) : silentLogger,
    startSpreadMs: 0,
    kubernetes: { connection: fromKubeconfig(kube.kubeconfig), debounceMs: 20 },
  });
});

after(async () => {
  await daemon?.shutdown(5000);
  await world?.close();
  await kube?.close();
  await receiver?.stop();
});

const bodies = () => receiver.accepted().map((r) => JSON.parse(r.body.toString('utf8')) as Body);

test("the cluster's Provider and Alert: the push is delivered, signed with the token from the Provider's Secret", async () => {
  assert.equal(daemon!.view.current.config.providers.size, 1);
  assert.equal(daemon!.view.current.config.alerts.size, 1);
  await receiver.arrived(1);
  const [first] = receiver.accepted();
  assert.equal(first!.signatureValid, true);
  const body = bodies()[0]!;
  assert.equal(body.reason, 'UpgradeWritten');
  assert.deepEqual(body.involvedObject, {
    ...body.involvedObject,
    kind: 'ImageUpdateAutomation',
    name: 'fleet',
  });
  assert.match(body.message, /app:1\.0\.0 → \S*app:1\.1\.0 \(upgrade\)/);
});

test("requestedAt patched as notification-controller's Receiver patches it runs the object now", async () => {
  await pushTags(world.registry.url, 'team/app', ['1.2.0']);
  const seen = receiver.requests.length;
  // fluxcd/notification-controller: a merge patch of the annotation, time.RFC3339Nano.
  const at = new Date().toISOString().replace('Z', '123456Z');
  await kube.kubectl([
    'patch',
    '-n',
    NS,
    `${FLUX.repository}/app`,
    '--type=merge',
    '-p',
    JSON.stringify({ metadata: { annotations: { 'reconcile.fluxcd.io/requestedAt': at } } }),
  ]);
  await waitFor(kube, NS, `${FLUX.repository}/app`, `jsonpath={.status.lastHandledReconcileAt}=${at}`);
  await receiver.arrived(seen + 1);
  const pushed = bodies().at(-1)!;
  assert.equal(pushed.reason, 'UpgradeWritten');
  assert.match(pushed.message, /app:1\.1\.0 → \S*app:1\.2\.0 \(upgrade\)/);
  assert.match(await world.git.show(world.repoName, 'main', 'apps/app.yaml'), /team\/app:1\.2\.0 #/);
});
