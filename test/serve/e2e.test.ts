/**
 * The daemon end to end: the real docker-registry notifies the real `pawl serve` (a
 * `distribution` Receiver, `Authorization: Bearer TOKEN`), and a push of a new tag ends up as a
 * commit on the smart-HTTP git remote — with every interval an hour long, so only the webhook
 * can have caused it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pushTags } from '../helpers/push.js';
import { eventually, metricValue, startServe, type ServeProcess } from '../helpers/serve.js';
import { startServeWorld, type ServeWorld } from './fixtures.js';

describe('pawl serve end to end', () => {
  let sw: ServeWorld;
  let serve: ServeProcess;
  before(async () => {
    sw = await startServeWorld();
    await pushTags(sw.world.registry.url, 'team/app', ['1.0.0']);
    serve = await startServe({
      configDir: sw.world.configDir,
      stateDir: sw.world.stateDir,
      listenPort: sw.port,
    });
    // The first pass at start finds the marker up to date.
    await serve.waitForLog((r) => r.msg === 'pass' && r.automation === 'flux-system/fleet', 'first pass');
  });
  after(async () => {
    await serve?.stop();
    await sw?.world.close();
  });

  test('a push of a new tag becomes a commit on the remote through the registry notification', async () => {
    const { world } = sw;
    const before = await world.git.log(world.repoName, 'main');
    await pushTags(world.registry.url, 'team/app', ['1.1.0']);
    const head = await eventually(async () => {
      const log = await world.git.log(world.repoName, 'main');
      return log.length > before.length ? log[0] : undefined;
    }, 'a commit on the remote');
    const content = await world.git.show(world.repoName, head!.sha, 'apps/app.yaml');
    assert.match(content, /team\/app:1\.1\.0 # \{"\$imagepolicy": "flux-system:app"\}/);
    assert.equal((await world.git.log(world.repoName, 'main')).length, before.length + 1);

    const metrics = await serve.metrics();
    assert.ok(metricValue(metrics, 'pawl_webhook_requests_total', { result: 'accepted' }) >= 1);
    assert.equal(metricValue(metrics, 'pawl_webhook_to_push_seconds_count'), 1);
    assert.ok(metricValue(metrics, 'pawl_automation_runs_total', { result: 'pushed' }) === 1);

    const { json } = await serve.adminGet<{
      lastPass: { report: { automations: { result: string; commit: string }[] } };
    }>('/api/v1/automations/flux-system/fleet');
    assert.equal(json.lastPass.report.automations[0]!.result, 'pushed');
    assert.equal(json.lastPass.report.automations[0]!.commit, head!.sha);
  });

  test('health, readiness and a clean stop', async () => {
    assert.equal((await serve.adminGet('/healthz')).status, 200);
    assert.equal((await serve.adminGet('/readyz')).status, 200);
    const { code } = await serve.stop('SIGTERM');
    assert.equal(code, 0);
  });
});
