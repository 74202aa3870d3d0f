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

    // The commit reaches the remote before the pass has recorded it: wait for the pass's log line.
    await serve.waitForLog((r) => r.msg === 'pass' && r.result === 'pushed', 'the pass that pushed');
    const metrics = await serve.metrics();
    assert.ok(metricValue(metrics, 'pawl_webhook_requests_total', { result: 'accepted' }) >= 1);
    assert.equal(metricValue(metrics, 'pawl_webhook_to_push_seconds_count'), 1);
    assert.ok(metricValue(metrics, 'pawl_automation_runs_total', { result: 'pushed' }) === 1);
    // Every registry answer is counted by host and status (tags lists, manifests: 200s).
    assert.ok(
      metricValue(metrics, 'pawl_registry_requests_total', { registry: world.registryHost, status: '200' }) >=
        2,
    );

    const { json } = await serve.adminGet<{
      lastPass: {
        report: {
          repositories: { name: string }[];
          policies: { name: string; candidate: string | null }[];
          automations: { result: string; commit: string }[];
        };
      };
    }>('/api/v1/automations/flux-system/fleet');
    // The rows of every repository and policy are read back from the run the store keeps.
    assert.deepEqual(
      json.lastPass.report.repositories.map((r) => r.name),
      ['flux-system/app'],
    );
    assert.deepEqual(
      json.lastPass.report.policies.map((p) => p.name),
      ['flux-system/app'],
    );
    // The registry re-sends a notification it thinks timed out (a loaded machine), and a request
    // during a pass earns one follow-up: the last pass may then be a later, up-to-date one. The
    // metric above says there was exactly one push either way.
    const last = json.lastPass.report.automations[0]!;
    if (last.result === 'pushed') assert.equal(last.commit, head!.sha);
    else assert.equal(last.result, 'up-to-date');
  });

  test('the JSON API serves each object as the CLI shows it', async () => {
    const status = await serve.adminGet<{
      ready: boolean;
      config: { objects: Record<string, number>; lastReload: { applied: boolean; reason: string } };
      jobs: { total: number; failing: unknown[] };
    }>('/api/v1/status');
    assert.equal(status.json.ready, true);
    assert.equal(status.json.config.objects.ImageRepository, 1);
    assert.deepEqual(status.json.config.lastReload, {
      ...status.json.config.lastReload,
      applied: true,
      reason: 'start',
    });
    assert.equal(status.json.jobs.total, 2);
    assert.deepEqual(status.json.jobs.failing, []);

    const repos =
      await serve.adminGet<{ name: string; tags: number; job: { runs: number; lastError: null } }[]>(
        '/api/v1/repositories',
      );
    assert.equal(repos.json[0]!.name, 'flux-system/app');
    assert.equal(repos.json[0]!.tags, 2);
    assert.ok(repos.json[0]!.job.runs >= 2);

    const tags = await serve.adminGet<{ tags: { tag: string }[] }>(
      '/api/v1/repositories/flux-system/app/tags',
    );
    assert.deepEqual(tags.json.tags.map((t) => t.tag).sort(), ['1.0.0', '1.1.0']);
    const cliTags = await sw.world.pawlJson<{ tags: { tag: string }[] }>(['tags', 'app']);
    assert.deepEqual(tags.json.tags, cliTags.json.tags);

    const history = await serve.adminGet<{ scans: { outcome: string; added: string[] }[] }>(
      '/api/v1/repositories/flux-system/app/history',
    );
    assert.ok(history.json.scans.some((s) => s.added.includes('1.1.0')));

    const policies =
      await serve.adminGet<{ name: string; candidate: string; highWater: string }[]>('/api/v1/policies');
    assert.deepEqual(
      policies.json.map((p) => [p.name, p.candidate, p.highWater]),
      [['flux-system/app', '1.1.0', '1.1.0']],
    );
    const explained = await serve.adminGet<{
      candidate: string;
      markers: { reason: string; file: string }[];
    }>('/api/v1/policies/flux-system/app/explain');
    assert.equal(explained.json.candidate, '1.1.0');
    assert.deepEqual(
      explained.json.markers.map((m) => [m.file, m.reason]),
      [['apps/app.yaml', 'up-to-date']],
    );

    const automations =
      await serve.adminGet<{ name: string; lastPass: { result: string; trigger: string } }[]>(
        '/api/v1/automations',
      );
    // 'up-to-date' when a repeated notification earned a follow-up pass (see the test above).
    assert.ok(['pushed', 'up-to-date'].includes(automations.json[0]!.lastPass.result));
    assert.equal(automations.json[0]!.lastPass.trigger, 'request');
    assert.equal((await serve.adminGet('/api/v1/automations/flux-system/nope')).status, 404);
    assert.equal((await serve.adminGet('/api/v1/policies/flux-system/nope/explain')).status, 404);
    assert.equal((await serve.adminGet('/api/v1/events')).status, 200);

    // One pawl serve on SQLite is its own only replica, and every job is its own.
    const replicas = await serve.adminGet<{
      coordinator: string;
      healthy: boolean;
      replicas: { self: boolean; live: boolean }[];
    }>('/api/v1/replicas');
    assert.equal(replicas.json.coordinator, 'local');
    assert.equal(replicas.json.healthy, true);
    assert.deepEqual(
      replicas.json.replicas.map((r) => [r.self, r.live]),
      [[true, true]],
    );
    const jobs =
      await serve.adminGet<{ job: { owner: boolean; skips: number; skipped: null } }[]>(
        '/api/v1/automations',
      );
    assert.deepEqual(
      [jobs.json[0]!.job.owner, jobs.json[0]!.job.skips, jobs.json[0]!.job.skipped],
      [true, 0, null],
    );
  });

  test('health, readiness and a clean stop', async () => {
    assert.equal((await serve.adminGet('/healthz')).status, 200);
    assert.equal((await serve.adminGet('/readyz')).status, 200);
    const { code } = await serve.stop('SIGTERM');
    assert.equal(code, 0);
  });
});
