/**
 * The real CNCF registry (Debian's docker-registry) configured to notify a receiver: what it sends
 * for a push and for a pull, fed through verifyWebhook and resolveTriggers.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../../../src/config/load.js';
import {
  MAX_WEBHOOK_BODY_BYTES,
  receiverHookPath,
  receiverRoutes,
  resolveTriggers,
  verifyWebhook,
  type WebhookVerdict,
} from '../../../src/serve/receivers/index.js';
import { startRegistry, type TestRegistry } from '../../helpers/registry.js';
import { pushImage } from '../../helpers/push.js';
import { configDir } from '../../config/fixtures.js';

const TOKEN = 'registry-hook-token-5b1e';
const NAME = 'registry';
const NS = 'apps';
const PATH = receiverHookPath(TOKEN, NAME, NS);

interface Received {
  headers: IncomingHttpHeaders;
  verdict: WebhookVerdict;
}

/**
 * A small receiver: the hook path feeds verifyWebhook with what arrives and answers its status;
 * any other path is 404. Waiters are woken by each request, so nothing depends on timing.
 */
function startReceiver(): Promise<{
  server: Server;
  url: string;
  received: Received[];
  waitFor(what: string, done: (r: Received[]) => boolean): Promise<void>;
}> {
  const received: Received[] = [];
  const waiters: { what: string; done: (r: Received[]) => boolean; resolve: () => void }[] = [];
  const wake = (): void => {
    for (const w of [...waiters]) {
      if (w.done(received)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  };
  const target = {
    namespace: NS,
    name: NAME,
    type: 'distribution' as const,
    token: TOKEN,
    events: [],
    resources: [{ kind: 'ImageRepository', name: 'app' }],
    suspend: false,
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_WEBHOOK_BODY_BYTES) chunks.push(c);
    });
    req.on('end', () => {
      if (req.url !== PATH) {
        res.writeHead(404).end();
        return;
      }
      const verdict = verifyWebhook(target, { headers: req.headers, body: Buffer.concat(chunks) });
      received.push({ headers: req.headers, verdict });
      res.writeHead(verdict.status).end();
      wake();
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as AddressInfo).port;
      resolve({
        server,
        url: `http://127.0.0.1:${port}`,
        received,
        waitFor: (what, done) =>
          new Promise<void>((res, rej) => {
            if (done(received)) return res();
            // Not an assertion about speed: only a guard so a broken set-up fails instead of hanging.
            const guard = setTimeout(() => {
              rej(
                new Error(
                  `the registry never sent ${what}; got ${JSON.stringify(received.map((r) => r.verdict))}`,
                ),
              );
            }, 60_000);
            waiters.push({
              what,
              done,
              resolve: () => {
                clearTimeout(guard);
                res();
              },
            });
          }),
      });
    });
  });
}

const accepted = (r: Received[], tag: string): boolean =>
  r.some((x) => x.verdict.status === 202 && x.verdict.event.images.some((i) => i.tag === tag));

describe('the CNCF registry notifying a distribution receiver', () => {
  let registry: TestRegistry;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  before(async () => {
    receiver = await startReceiver();
    registry = await startRegistry({
      notifications: [
        { name: 'pawl', url: `${receiver.url}${PATH}`, headers: { Authorization: [`Bearer ${TOKEN}`] } },
      ],
    });
  });
  after(async () => {
    await registry?.stop();
    await new Promise((r) => receiver?.server.close(r));
  });

  test('a push of a tag is verified (202) with that repository and tag, and triggers its ImageRepository', async () => {
    await pushImage(registry.url, 'team/app', '1.2.3', { created: new Date('2026-01-01T00:00:00Z') });
    await receiver.waitFor('the push of team/app:1.2.3', (r) => accepted(r, '1.2.3'));

    const hit = receiver.received.find((x) => accepted([x], '1.2.3'))!;
    assert.equal(hit.headers['content-type'], 'application/vnd.docker.distribution.events.v1+json');
    assert.ok(hit.verdict.status === 202);
    assert.deepEqual(hit.verdict.event.images, [
      { repository: `${registry.host}/team/app`, path: 'team/app', registry: registry.host, tag: '1.2.3' },
    ]);
    // The blobs' pushes carry no tag: verified, and nothing to do.
    for (const other of receiver.received.filter((x) => x !== hit)) {
      assert.equal(other.verdict.status, 200, JSON.stringify(other.verdict));
    }

    const { dir, cleanup } = await configDir({
      'c.yaml': `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: app, namespace: ${NS}}
spec: {image: '${registry.host}/team/app', interval: 1h}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: app, namespace: ${NS}}
spec:
  imageRepositoryRef: {name: app}
  policy: {semver: {range: '>=1.0.0'}}
---
apiVersion: notification.toolkit.fluxcd.io/v1
kind: Receiver
metadata: {name: ${NAME}, namespace: ${NS}}
spec:
  type: distribution
  secretRef: {name: hook}
  resources: [{kind: ImageRepository, name: app}]
---
apiVersion: v1
kind: Secret
metadata: {name: hook, namespace: ${NS}}
stringData: {token: ${TOKEN}}
`,
    });
    try {
      const { config, problems } = await loadConfig([dir]);
      assert.deepEqual(problems, []);
      const route = receiverRoutes(config).byPath.get(PATH);
      assert.ok(route, 'the configuration routes the path the registry calls');
      assert.deepEqual(resolveTriggers(hit.verdict.event, route.receiver, config), {
        repositories: [`${NS}/app`],
        automations: [],
        tags: [`${NS}/app:1.2.3`],
        skipped: [],
      });
    } finally {
      await cleanup();
    }
  });

  test('a pull (GET and HEAD) produces no work', async () => {
    const before = receiver.received.length;
    const manifest = `${registry.url}/v2/team/app/manifests/1.2.3`;
    const accept = { accept: 'application/vnd.oci.image.manifest.v1+json' };
    const get = await fetch(manifest, { headers: accept });
    assert.equal(get.status, 200);
    await get.arrayBuffer();
    const head = await fetch(manifest, { method: 'HEAD', headers: accept });
    assert.equal(head.status, 200);
    // A later push marks the end: once its event is in, the pulls' events have been sent.
    await pushImage(registry.url, 'team/app', '1.2.4', { created: new Date('2026-01-02T00:00:00Z') });
    await receiver.waitFor('the pull events and the marker push', (r) => {
      const since = r.slice(before);
      return (
        accepted(since, '1.2.4') &&
        since.some((x) => x.verdict.status === 200 && /pull/.test(x.verdict.ignored))
      );
    });
    const since = receiver.received.slice(before);
    const work = since.filter((x) => x.verdict.status === 202);
    assert.deepEqual(
      work.flatMap((x) => (x.verdict.status === 202 ? x.verdict.event.images.map((i) => i.tag) : [])),
      ['1.2.4'],
      'only the marker push is work',
    );
    assert.ok(since.every((x) => x.verdict.status === 200 || x.verdict.status === 202));
  });
});
