/**
 * Hostile and bursty input at the HTTP level, against the daemon in-process with the real
 * registry and git server: wrong and missing tokens, oversized and malformed bodies, a replayed
 * event, unknown paths, a burst of valid events for one automation (one or two passes, not 50),
 * and a flood of junk (refused; no work; the daemon stays healthy, memory bounded).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { pushTags } from '../helpers/push.js';
import { eventually, metricValue } from '../helpers/serve.js';
import { silentLogger } from '../../src/util/log.js';
import {
  automationJob,
  repositoryJob,
  startServer,
  type PassEvent,
  type Server,
} from '../../src/serve/index.js';
import { MAX_WEBHOOK_BODY_BYTES } from '../../src/serve/webhooks.js';
import { HOOK_PATH, TOKEN, startServeWorld, type ServeWorld } from './fixtures.js';

const AUTOMATION = 'flux-system/fleet';

function pushEvent(tag: string, action = 'push'): string {
  return JSON.stringify({
    events: [
      {
        id: randomUUID(),
        timestamp: new Date().toISOString(),
        action,
        target: {
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          digest: `sha256:${'0'.repeat(64)}`,
          repository: 'team/app',
          tag,
        },
      },
    ],
  });
}

describe('webhooks at the HTTP level', () => {
  let sw: ServeWorld;
  let server: Server;
  const passes: PassEvent[] = [];
  const post = (path: string, body: string | Buffer, headers: Record<string, string> = {}) =>
    fetch(`http://${server.listen}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/vnd.docker.distribution.events.v1+json', ...headers },
      body,
    });
  const auth = { authorization: `Bearer ${TOKEN}` };
  const idle = () =>
    eventually(async () => {
      const st = server.daemon.scheduler.status(automationJob(AUTOMATION));
      return st && !st.running && !st.queued ? true : undefined;
    }, 'the automation is idle');

  before(async () => {
    // Behind the fault proxy (images are named with its host; these tests send the events themselves).
    sw = await startServeWorld({ proxy: true });
    await pushTags(sw.world.registry.url, 'team/app', ['1.0.0']);
    server = await startServer({
      configPaths: [sw.world.configDir],
      stateDir: sw.world.stateDir,
      log: silentLogger,
      listen: '127.0.0.1:0',
      adminListen: '127.0.0.1:0',
      watch: false,
      startSpreadMs: 0,
    });
    server.daemon.events.onReport((e) => passes.push(e));
    await eventually(async () => (passes.length >= 1 ? true : undefined), 'the first pass');
    await idle();
  });
  after(async () => {
    await server?.stop(5_000);
    await sw?.world.close();
  });

  test('unknown paths and methods: 404, nothing runs', async () => {
    const before = passes.length;
    assert.equal((await post('/hook/' + '0'.repeat(64), pushEvent('9.9.9'), auth)).status, 404);
    assert.equal((await post('/hook/', pushEvent('9.9.9'), auth)).status, 404);
    assert.equal((await post('/metrics', '')).status, 404);
    assert.equal((await fetch(`http://${server.listen}${HOOK_PATH}`)).status, 404);
    assert.equal((await fetch(`http://${server.listen}/api/v1/status`)).status, 404, 'no state on --listen');
    assert.equal(passes.length, before);
  });

  test('missing or wrong token: 401/403 and no work', async () => {
    const scans = server.daemon.scheduler.status(repositoryJob('flux-system/app'))!.runs;
    const before = passes.length;
    assert.equal((await post(HOOK_PATH, pushEvent('9.9.9'))).status, 401);
    assert.equal((await post(HOOK_PATH, pushEvent('9.9.9'), { authorization: 'Bearer wrong' })).status, 403);
    assert.equal(
      (await post(HOOK_PATH, pushEvent('9.9.9'), { authorization: `Basic ${TOKEN}` })).status,
      403,
    );
    assert.equal(
      (await post(HOOK_PATH, pushEvent('9.9.9'), { authorization: `Bearer ${TOKEN}x` })).status,
      403,
    );
    assert.equal(passes.length, before);
    assert.equal(server.daemon.scheduler.status(repositoryJob('flux-system/app'))!.runs, scans);
  });

  test('an oversized body: 413; a malformed one: 400; a pull: 200 ignored', async () => {
    const before = passes.length;
    const big = Buffer.alloc(MAX_WEBHOOK_BODY_BYTES + 1, 0x20);
    assert.equal((await post(HOOK_PATH, big, auth)).status, 413);
    assert.equal((await post(HOOK_PATH, '{"events": [', auth)).status, 400);
    assert.equal((await post(HOOK_PATH, pushEvent('1.0.0', 'pull'), auth)).status, 200);
    assert.equal(passes.length, before);
    const m = await (await fetch(`http://${server.admin}/metrics`)).text();
    assert.equal(metricValue(m, 'pawl_webhook_requests_total', { result: 'too-large' }), 1);
    assert.equal(metricValue(m, 'pawl_webhook_requests_total', { result: 'malformed' }), 1);
  });

  test('a push event runs the automation once; the same event replayed does nothing', async () => {
    await pushTags(sw.world.registry.url, 'team/app', ['1.1.0']);
    const body = pushEvent('1.1.0');
    const before = passes.length;
    assert.equal((await post(HOOK_PATH, body, auth)).status, 202);
    await eventually(async () => (passes.length > before ? true : undefined), 'a pass');
    await idle();
    assert.equal(passes.length, before + 1);
    assert.equal(passes.at(-1)!.report.automations[0]!.result, 'pushed');
    const replay = await post(HOOK_PATH, body, auth);
    assert.equal(replay.status, 200);
    assert.match(((await replay.json()) as { ignored: string }).ignored, /already received/);
    await idle();
    assert.equal(passes.length, before + 1);
  });

  test('a tag the registry announced but does not serve yet: the pass runs again shortly and pushes it', async () => {
    await pushTags(sw.world.registry.url, 'team/app', ['1.1.5']);
    sw.world.proxy!.setMissingManifests('team/app', ['1.1.5']);
    const before = passes.length;
    assert.equal((await post(HOOK_PATH, pushEvent('1.1.5'), auth)).status, 202);
    await eventually(async () => (passes.length > before ? true : undefined), 'a pass');
    assert.notEqual(passes[before]!.report.automations[0]!.result, 'pushed');
    sw.world.proxy!.setMissingManifests('team/app', []);
    await eventually(
      async () => (passes.at(-1)!.report.automations[0]!.result === 'pushed' ? true : undefined),
      'a pass that pushes',
    );
    await idle();
    const log = await sw.world.git.log(sw.world.repoName, 'main');
    assert.match(await sw.world.git.show(sw.world.repoName, log[0]!.sha, 'apps/app.yaml'), /app:1\.1\.5 /);
    assert.equal(passes.at(-1)!.webhooks, 0, 'the retry carries no new webhook');
  });

  test('a burst of 50 events for one automation: one or two passes, not 50', async () => {
    await pushTags(sw.world.registry.url, 'team/app', ['1.2.0']);
    const before = passes.length;
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => post(HOOK_PATH, pushEvent('1.2.0'), auth)),
    );
    assert.deepEqual(new Set(answers.map((a) => a.status)), new Set([202]));
    await eventually(async () => (passes.length > before ? true : undefined), 'a pass');
    await idle();
    const n = passes.length - before;
    assert.ok(n >= 1 && n <= 2, `${n} passes for 50 events`);
    const folded = passes.slice(before).reduce((sum, p) => sum + p.webhooks, 0);
    assert.equal(folded, 50, 'every event was folded into those passes');
    const log = await sw.world.git.log(sw.world.repoName, 'main');
    assert.match(await sw.world.git.show(sw.world.repoName, log[0]!.sha, 'apps/app.yaml'), /app:1\.2\.0 /);
  });

  test('a flood of junk is refused; no work beyond what is due; healthy; memory bounded', async () => {
    const before = passes.length;
    const scans = server.daemon.scheduler.status(repositoryJob('flux-system/app'))!.runs;
    global.gc?.();
    const heapBefore = process.memoryUsage().heapUsed;
    const statuses = new Map<number, number>();
    for (let round = 0; round < 10; round++) {
      const answers = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          i % 3 === 0
            ? post(HOOK_PATH, Buffer.alloc(64 * 1024, 0x41), { authorization: 'Bearer nope' })
            : i % 3 === 1
              ? post(`/hook/${randomUUID()}`, 'x')
              : post(HOOK_PATH, pushEvent('6.6.6')),
        ),
      );
      for (const a of answers) {
        statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
        await a.arrayBuffer();
      }
    }
    for (const s of statuses.keys()) assert.ok([401, 403, 404, 503].includes(s), `status ${s}`);
    assert.equal(passes.length, before);
    assert.equal(server.daemon.scheduler.status(repositoryJob('flux-system/app'))!.runs, scans);
    assert.equal((await fetch(`http://${server.admin}/healthz`)).status, 200);
    assert.equal((await fetch(`http://${server.admin}/readyz`)).status, 200);
    global.gc?.();
    const grown = process.memoryUsage().heapUsed - heapBefore;
    assert.ok(grown < 64 * 1024 * 1024, `heap grew by ${grown} bytes over 2,000 junk requests`);
  });
});
