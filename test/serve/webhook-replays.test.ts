/**
 * Replays against the daemon in-process, with the real registry and git server: for every
 * Receiver type, a delivery sent again (with any unsigned delivery header changed) is answered
 * 200 "already received" and causes no pass; and a verified event that makes nothing due is
 * answered 200 and counted apart from the accepted ones.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createHmac, randomUUID } from 'node:crypto';
import { pushTags } from '../helpers/push.js';
import { eventually, metricValue } from '../helpers/serve.js';
import { automationJob, startServer, type PassEvent, type Server } from '../../src/serve/index.js';
import { HOOK_PATH, TOKEN, inProcess, startServeWorld, type ServeWorld } from './fixtures.js';

const AUTOMATION = 'flux-system/fleet';
type Headers = Record<string, string>;

const hmac = (alg: 'sha1' | 'sha256', body: string) => createHmac(alg, TOKEN).update(body).digest('hex');
const json = (v: unknown) => JSON.stringify(v);

interface Delivery {
  type: string;
  body(registry: string): string;
  /** The headers of one delivery of `body`; `n` numbers the delivery (a header id a replayer may change). */
  headers(body: string, n: number): Headers;
}

const DELIVERIES: Delivery[] = [
  { type: 'generic', body: () => '', headers: () => ({}) },
  {
    type: 'generic-hmac',
    body: () => json({ ref: 'main', sha: 'abc123' }),
    headers: (b) => ({ 'content-type': 'application/json', 'x-signature': `sha256=${hmac('sha256', b)}` }),
  },
  {
    type: 'github',
    body: () => json({ ref: 'refs/heads/main', after: 'f00d', repository: { full_name: 'org/app' } }),
    headers: (b, n) => ({
      'content-type': 'application/json',
      'x-github-event': 'push',
      'x-github-delivery': `gh-${n}`,
      'x-hub-signature-256': `sha256=${hmac('sha256', b)}`,
    }),
  },
  {
    type: 'gitlab',
    body: () => json({ object_kind: 'push', ref: 'refs/heads/main', after: 'f00d' }),
    headers: (_b, n) => ({
      'content-type': 'application/json',
      'x-gitlab-event': 'Push Hook',
      'x-gitlab-event-uuid': `gl-${n}`,
      'x-gitlab-token': TOKEN,
    }),
  },
  {
    type: 'bitbucket',
    body: () => json({ eventKey: 'repo:refs_changed', changes: [{ toHash: 'f00d' }] }),
    headers: (b, n) => ({
      'content-type': 'application/json',
      'x-event-key': 'repo:refs_changed',
      'x-request-id': `bb-${n}`,
      'x-hub-signature': `sha256=${hmac('sha256', b)}`,
    }),
  },
  {
    type: 'harbor',
    body: (r) =>
      json({
        type: 'PUSH_ARTIFACT',
        occur_at: 1,
        event_data: {
          resources: [{ digest: 'sha256:aa', tag: '1.0.0', resource_url: `${r}/team/app:1.0.0` }],
          repository: { name: 'app', namespace: 'team', repo_full_name: 'team/app' },
        },
      }),
    headers: () => ({ 'content-type': 'application/json', authorization: TOKEN }),
  },
  {
    type: 'dockerhub',
    body: () =>
      json({
        push_data: { tag: '1.0.0' },
        repository: { repo_name: 'team/app', name: 'app', namespace: 'team' },
      }),
    headers: () => ({ 'content-type': 'application/json' }),
  },
  {
    type: 'quay',
    body: (r) => json({ repository: 'team/app', docker_url: `${r}/team/app`, updated_tags: ['1.0.0'] }),
    headers: () => ({ 'content-type': 'application/json' }),
  },
  {
    type: 'nexus',
    body: () =>
      json({
        repositoryName: 'docker-hosted',
        action: 'CREATED',
        component: { format: 'docker', name: 'team/app', version: '1.0.0' },
      }),
    headers: (b, n) => ({
      'content-type': 'application/json',
      'x-nexus-webhook-id': 'rm:repository:component',
      'x-nexus-webhook-delivery': `nx-${n}`,
      'x-nexus-webhook-signature': hmac('sha1', b),
    }),
  },
  {
    type: 'acr',
    body: (r) =>
      json({
        id: 'acr-event-1',
        action: 'push',
        target: { repository: 'team/app', tag: '1.0.0' },
        request: { host: r, method: 'PUT' },
      }),
    headers: () => ({ 'content-type': 'application/json' }),
  },
  {
    type: 'distribution',
    body: (r) =>
      json({
        events: [
          {
            id: 'dist-event-1',
            action: 'push',
            target: { repository: 'team/app', tag: '1.0.0' },
            request: { host: r },
          },
        ],
      }),
    headers: () => ({
      'content-type': 'application/vnd.docker.distribution.events.v1+json',
      authorization: `Bearer ${TOKEN}`,
    }),
  },
];

const pathOf = (type: string) =>
  `/hook/${createHash('sha256').update(`${TOKEN}replay-${type}flux-system`).digest('hex')}`;
const RECEIVERS_YAML = DELIVERIES.map(
  ({ type }) => `apiVersion: notification.toolkit.fluxcd.io/v1
kind: Receiver
metadata: {name: replay-${type}, namespace: flux-system}
spec:
  type: ${type}
  resources: [{kind: ImageRepository, name: app}]
  secretRef: {name: webhook-token}
`,
).join('---\n');

describe('webhook replays and events that trigger nothing', () => {
  let sw: ServeWorld;
  let server: Server;
  const passes: PassEvent[] = [];
  let scans = 0;
  const metrics = async () => (await fetch(`http://${server.admin}/metrics`)).text();
  const post = (path: string, body: string, headers: Headers) =>
    fetch(`http://${server.listen}${path}`, { method: 'POST', headers, body });
  const idle = () =>
    eventually(async () => {
      const st = server.daemon.scheduler.status(automationJob(AUTOMATION));
      return st && !st.running && !st.queued ? true : undefined;
    }, 'the automation is idle');

  before(async () => {
    sw = await startServeWorld();
    await pushTags(sw.world.registry.url, 'team/app', ['1.0.0']);
    await sw.world.writeConfig('replays.yaml', RECEIVERS_YAML);
    server = await startServer(inProcess(sw));
    server.daemon.events.onReport((e) => passes.push(e));
    server.daemon.events.onScan(() => scans++);
    await eventually(async () => (passes.length >= 1 ? true : undefined), 'the first pass');
    await idle();
  });
  after(async () => {
    await server?.stop(5_000);
    await sw?.world.close();
  });

  for (const d of DELIVERIES) {
    test(`${d.type}: the same delivery again is 200 "already received" and no pass`, async () => {
      const body = d.body(sw.world.registryHost);
      const path = pathOf(d.type);
      const first = await post(path, body, d.headers(body, 0));
      const firstJson = (await first.json()) as { ignored?: string };
      // Docker Hub's images are on docker.io, which this world does not serve: nothing is due.
      if (d.type === 'dockerhub') assert.equal(first.status, 200, JSON.stringify(firstJson));
      else assert.equal(first.status, 202, JSON.stringify(firstJson));
      assert.doesNotMatch(firstJson.ignored ?? '', /already received/);
      await idle();
      const passesBefore = passes.length;
      const scansBefore = scans;
      const replayedBefore = metricValue(await metrics(), 'pawl_webhook_requests_total', {
        receiver: `flux-system/replay-${d.type}`,
        result: 'replayed',
      });
      const n = d.type === 'github' ? 30 : 3;
      for (let i = 1; i <= n; i++) {
        const again = await post(path, body, d.headers(body, i));
        assert.equal(again.status, 200, `replay ${i}`);
        assert.match(((await again.json()) as { ignored: string }).ignored, /already received/);
      }
      await idle();
      assert.equal(passes.length, passesBefore, 'no pass for a replay');
      assert.equal(scans, scansBefore, 'no scan for a replay');
      const replayed = metricValue(await metrics(), 'pawl_webhook_requests_total', {
        receiver: `flux-system/replay-${d.type}`,
        result: 'replayed',
      });
      assert.equal(replayed - replayedBefore, n);
    });
  }

  test('a verified event that makes nothing due: 200, counted as triggered-nothing, not accepted', async () => {
    const before = await metrics();
    const accepted = metricValue(before, 'pawl_webhook_requests_total', { result: 'accepted' });
    const nothing = metricValue(before, 'pawl_webhook_requests_total', { result: 'triggered-nothing' });
    const passesBefore = passes.length;
    const body = json({
      events: [{ id: randomUUID(), action: 'push', target: { repository: 'team/other', tag: '2.0.0' } }],
    });
    const res = await post(HOOK_PATH, body, {
      'content-type': 'application/vnd.docker.distribution.events.v1+json',
      authorization: `Bearer ${TOKEN}`,
    });
    assert.equal(res.status, 200);
    const answer = (await res.json()) as { ignored: string; skipped: string[] };
    assert.match(answer.ignored, /no resource of the receiver is due/);
    assert.ok(answer.skipped.length >= 1, 'says what was skipped');
    await idle();
    assert.equal(passes.length, passesBefore);
    const m = await metrics();
    assert.equal(metricValue(m, 'pawl_webhook_requests_total', { result: 'accepted' }), accepted);
    assert.equal(metricValue(m, 'pawl_webhook_requests_total', { result: 'triggered-nothing' }), nothing + 1);
  });
});
