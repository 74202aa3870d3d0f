/**
 * Alerts through the daemon (issue 14): `pawl serve` with a Flux Provider (generic-hmac) and Alert
 * posts to a real HTTP receiver on loopback — an upgrade it wrote, then a downgrade it refused
 * after a person committed a newer tag by hand — each once, signed, in Flux's event JSON.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pushTags } from '../helpers/push.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { eventually, metricValue, startServe, type ServeProcess } from '../helpers/serve.js';
import { DEPLOY, startServeWorld, type ServeWorld } from './fixtures.js';

const HMAC_TOKEN = 'alerts-hmac-token-0123456789abcdef';

const alertsYaml = (address: string) => `apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata:
  name: hook
  namespace: flux-system
spec:
  type: generic-hmac
  address: ${address}
  secretRef:
    name: hook-token
---
apiVersion: v1
kind: Secret
metadata:
  name: hook-token
  namespace: flux-system
stringData:
  token: ${HMAC_TOKEN}
---
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata:
  name: images
  namespace: flux-system
spec:
  providerRef:
    name: hook
  eventSeverity: info
  eventSources:
    - kind: ImagePolicy
      name: '*'
    - kind: ImageUpdateAutomation
      name: '*'
    - kind: ImageRepository
      name: '*'
`;

interface FluxEventBody {
  involvedObject: { kind: string; namespace: string; name: string };
  severity: string;
  reason: string;
  message: string;
  reportingController: string;
  metadata?: Record<string, string>;
}

describe('pawl serve sends alerts to Flux Providers', () => {
  let sw: ServeWorld;
  let serve: ServeProcess;
  let receiver: Receiver;
  const bodies = () => receiver.accepted().map((r) => JSON.parse(r.body.toString('utf8')) as FluxEventBody);

  before(async () => {
    receiver = await startReceiver({ token: HMAC_TOKEN });
    sw = await startServeWorld();
    await sw.world.writeConfig('alerts.yaml', alertsYaml(receiver.url));
    await pushTags(sw.world.registry.url, 'team/app', ['1.0.0']);
    serve = await startServe({
      configDir: sw.world.configDir,
      stateDir: sw.world.stateDir,
      listenPort: sw.port,
    });
    await serve.waitForLog((r) => r.msg === 'pass' && r.automation === 'flux-system/fleet', 'first pass');
  });
  after(async () => {
    await serve?.stop();
    await sw?.world.close();
    await receiver?.stop();
  });

  test('an upgrade pawl wrote arrives once, signed, as Flux event JSON', async () => {
    await pushTags(sw.world.registry.url, 'team/app', ['1.1.0']);
    await eventually(
      async () => bodies().find((b) => b.reason === 'UpgradeWritten'),
      'an UpgradeWritten alert at the receiver',
    );
    const upgrades = bodies().filter((b) => b.reason === 'UpgradeWritten');
    assert.equal(upgrades.length, 1);
    const e = upgrades[0]!;
    assert.equal(e.involvedObject.kind, 'ImageUpdateAutomation');
    assert.equal(`${e.involvedObject.namespace}/${e.involvedObject.name}`, 'flux-system/fleet');
    assert.equal(e.severity, 'info');
    assert.equal(e.reportingController, 'pawl');
    // The commit pushed, and the line it changed from the old tag to the new one: not only a version.
    const head = (await sw.world.git.log(sw.world.repoName, 'main'))[0]!;
    assert.equal(e.metadata?.commit, head.sha);
    assert.equal(
      e.message,
      `pushed ${head.sha.slice(0, 12)} to main:\napps/app.yaml:10 flux-system:app: ` +
        `${sw.world.registryHost}/team/app:1.0.0 → ${sw.world.registryHost}/team/app:1.1.0 (upgrade)`,
    );
    for (const r of receiver.accepted()) assert.equal(r.signatureValid, true);
  });

  test('a downgrade refused after a person committed a newer tag arrives once, as an error', async () => {
    // A person deploys 9.0.0 by hand; the registry's newest stays 1.1.0 until 1.2.0 is pushed.
    const { world } = sw;
    await world.git.commitFiles(
      world.repoName,
      'main',
      { 'apps/app.yaml': DEPLOY.replaceAll('{{REGISTRY}}', world.registryHost).replace('1.0.0', '9.0.0') },
      { message: 'Deploy 9.0.0 by hand', author: { name: 'Dana Dev', email: 'dana@example.com' } },
    );
    await pushTags(world.registry.url, 'team/app', ['1.2.0']);
    await eventually(
      async () => bodies().find((b) => b.reason === 'DowngradeBlocked'),
      'a DowngradeBlocked alert at the receiver',
    );
    // Everything the daemon counts as delivered has reached the receiver: a second copy sent by
    // the same pass would be counted, and seen, by now.
    await eventually(async () => {
      const m = await serve.metrics();
      const delivered = metricValue(m, 'pawl_alerts_total', {
        provider: 'flux-system/hook',
        outcome: 'delivered',
      });
      return delivered === receiver.accepted().length ? true : undefined;
    }, 'the delivered count to match what the receiver accepted');
    const blocked = bodies().filter((b) => b.reason === 'DowngradeBlocked');
    assert.equal(blocked.length, 1);
    assert.equal(blocked[0]!.severity, 'error');
    assert.equal(blocked[0]!.involvedObject.kind, 'ImagePolicy');
    assert.match(blocked[0]!.message, /9\.0\.0/);
    // Nothing was written over the person's tag.
    const head = (await world.git.log(world.repoName, 'main'))[0]!;
    assert.match(await world.git.show(world.repoName, head.sha, 'apps/app.yaml'), /team\/app:9\.0\.0/);
    const m = await serve.metrics();
    assert.ok(
      metricValue(m, 'pawl_alerts_total', { provider: 'flux-system/hook', outcome: 'delivered' }) >= 2,
    );
  });
});
