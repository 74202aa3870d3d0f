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
import type { WorkQueueStore } from '../../src/store/index.js';
import {
  automationJob,
  repositoryJob,
  startServer,
  type PassEvent,
  type Server,
} from '../../src/serve/index.js';
import { MAX_WEBHOOK_BODY_BYTES } from '../../src/serve/webhooks.js';
import { createHash } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// A real collection before each heap reading, so garbage is not mistaken for growth.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
import { HOOK_PATH, TOKEN, inProcess, startServeWorld, type ServeWorld } from './fixtures.js';

/** Every signed Receiver type: the header that carries its credential, and a wrong value of it. */
const SIGNED: { type: string; header: string; wrong: string }[] = [
  { type: 'generic-hmac', header: 'x-signature', wrong: `sha256=${'0'.repeat(64)}` },
  { type: 'github', header: 'x-hub-signature-256', wrong: `sha256=${'0'.repeat(64)}` },
  { type: 'gitlab', header: 'x-gitlab-token', wrong: 'not-the-token' },
  { type: 'bitbucket', header: 'x-hub-signature', wrong: `sha256=${'0'.repeat(64)}` },
  { type: 'harbor', header: 'authorization', wrong: 'not-the-token' },
  { type: 'nexus', header: 'x-nexus-webhook-signature', wrong: '0'.repeat(40) },
  { type: 'distribution', header: 'authorization', wrong: 'Bearer not-the-token' },
];
const signedPath = (type: string) =>
  `/hook/${createHash('sha256').update(`${TOKEN}signed-${type}flux-system`).digest('hex')}`;
const SIGNED_YAML = SIGNED.map(
  ({ type }) => `apiVersion: notification.toolkit.fluxcd.io/v1
kind: Receiver
metadata:
  name: signed-${type}
  namespace: flux-system
spec:
  type: ${type}
  resources:
    - apiVersion: image.toolkit.fluxcd.io/v1
      kind: ImageRepository
      name: app
  secretRef:
    name: webhook-token
`,
).join('---\n');

/** A repository no automation uses (its own namespace), with its own distribution Receiver. */
const SOLO_PATH = `/hook/${createHash('sha256').update(`${TOKEN}solotools`).digest('hex')}`;
const soloYaml = (image: string) => `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: solo, namespace: tools}
spec: {image: ${image}, interval: 1h}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: solo, namespace: tools}
spec:
  imageRepositoryRef: {name: solo}
  policy: {semver: {range: '>=1.0.0'}}
---
apiVersion: notification.toolkit.fluxcd.io/v1
kind: Receiver
metadata: {name: solo, namespace: tools}
spec:
  type: distribution
  resources: [{kind: ImageRepository, name: solo}]
  secretRef: {name: webhook-token}
---
apiVersion: v1
kind: Secret
metadata: {name: webhook-token, namespace: tools}
stringData: {token: ${TOKEN}}
`;

const AUTOMATION = 'flux-system/fleet';

function pushEvent(tag: string, action = 'push', repository = 'team/app'): string {
  return JSON.stringify({
    events: [
      {
        id: randomUUID(),
        timestamp: new Date().toISOString(),
        action,
        target: {
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          digest: `sha256:${'0'.repeat(64)}`,
          repository,
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
    await sw.world.writeConfig('signed.yaml', SIGNED_YAML);
    await pushTags(sw.world.registry.url, 'team/solo', ['1.0.0']);
    await sw.world.writeConfig('solo.yaml', soloYaml(`${sw.world.registryHost}/team/solo`));
    server = await startServer(inProcess(sw));
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

  test('every signed receiver type: missing credential 401, wrong one 403, and no work', async () => {
    const scans = server.daemon.scheduler.status(repositoryJob('flux-system/app'))!.runs;
    const before = passes.length;
    const vendor = { 'x-github-event': 'push', 'x-gitlab-event': 'Push Hook', 'x-event-key': 'repo:push' };
    for (const { type, header, wrong } of SIGNED) {
      const body = JSON.stringify({ type: 'PUSH_ARTIFACT', ref: 'refs/heads/main', events: [] });
      const missing = await post(signedPath(type), body, { 'content-type': 'application/json', ...vendor });
      assert.equal(missing.status, 401, `${type} without ${header}`);
      const bad = await post(signedPath(type), body, {
        'content-type': 'application/json',
        ...vendor,
        [header]: wrong,
      });
      assert.equal(bad.status, 403, `${type} with a wrong ${header}`);
    }
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
    const scrape = await fetch(`http://${server.admin}/metrics`);
    // Written piece by piece (ServeMetrics.pieces): chunked, in the text format's own type.
    assert.equal(scrape.headers.get('transfer-encoding'), 'chunked');
    assert.match(scrape.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    const m = await scrape.text();
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

  test('a tag the registry announced before listing it: scanned again shortly until listed, then pushed', async () => {
    // Debian's registry notifies while it stores the manifest, before it links the tag.
    await pushTags(sw.world.registry.url, 'team/app', ['1.1.7']);
    sw.world.proxy!.setTagList('team/app', ['1.0.0', '1.1.0', '1.1.5']);
    const before = passes.length;
    // The list shows the tag from the moment the first pass has reported (the retry comes later).
    const off = server.daemon.events.onReport(() => sw.world.proxy!.setTagList('team/app', null));
    try {
      assert.equal((await post(HOOK_PATH, pushEvent('1.1.7'), auth)).status, 202);
      await eventually(async () => (passes.length > before ? true : undefined), 'a pass');
    } finally {
      off();
      sw.world.proxy!.setTagList('team/app', null);
    }
    assert.equal(passes[before]!.report.automations[0]!.result, 'up-to-date');
    await eventually(
      async () => (passes.at(-1)!.report.automations[0]!.result === 'pushed' ? true : undefined),
      'a pass that pushes',
    );
    await idle();
    const log = await sw.world.git.log(sw.world.repoName, 'main');
    assert.match(await sw.world.git.show(sw.world.repoName, log[0]!.sha, 'apps/app.yaml'), /app:1\.1\.7 /);
    assert.deepEqual(
      passes.slice(before + 1).map((p) => p.webhooks),
      passes.slice(before + 1).map(() => 0),
      'the passes again carry no new webhook',
    );
  });

  test('the same for a repository no automation uses: its scan runs again until the tag is listed', async () => {
    const scans: { trigger: string; added: string[] }[] = [];
    const off = server.daemon.events.onScan((e) => {
      if (e.report.name === 'tools/solo') scans.push({ trigger: e.trigger, added: e.report.added });
    });
    try {
      await pushTags(sw.world.registry.url, 'team/solo', ['1.1.0']);
      sw.world.proxy!.setTagList('team/solo', ['1.0.0']);
      // The list shows the tag from the moment the first scan has reported (the retry comes later).
      const offScan = server.daemon.events.onScan((e) => {
        if (e.report.name === 'tools/solo') sw.world.proxy!.setTagList('team/solo', null);
      });
      try {
        assert.equal((await post(SOLO_PATH, pushEvent('1.1.0', 'push', 'team/solo'), auth)).status, 202);
        await eventually(async () => (scans.length >= 1 ? true : undefined), 'the scan');
      } finally {
        offScan();
        sw.world.proxy!.setTagList('team/solo', null);
      }
      assert.deepEqual(scans[0]!.added, [], 'the first scan did not list it');
      await eventually(
        async () => (scans.some((s) => s.added.includes('1.1.0')) ? true : undefined),
        'a scan that lists 1.1.0',
      );
      // Listed: no more scans are asked for (the interval is an hour). A rescan is only ever asked
      // for while the webhook's work stays queued; the scan that listed the tag acknowledged it
      // before it reported, so once that report is seen the durable queue holds nothing for it.
      const journal = server.daemon.view.store as Partial<Pick<WorkQueueStore, 'queuedWork'>>;
      assert.ok(journal.queuedWork, 'the SQLite store keeps the durable work queue');
      const left = (await journal.queuedWork()).filter((w) => w.key === repositoryJob('tools/solo'));
      assert.deepEqual(left, [], 'no work left for a rescan');
    } finally {
      off();
    }
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
    gc();
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
    gc();
    const grown = process.memoryUsage().heapUsed - heapBefore;
    assert.ok(grown < 64 * 1024 * 1024, `heap grew by ${grown} bytes over 2,000 junk requests`);
  });
});
