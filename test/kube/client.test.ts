/**
 * KubeClient's answer to 429 (Too Many Requests), the API server asking to come back — priority
 * and fairness, or a CRD's storage still initialising just after it is established: it waits
 * Retry-After (through the injected sleep) and tries again, as client-go does, and gives up
 * with the server's words after ten attempts. And a watch's BOOKMARK, whose object has no name,
 * is a new resourceVersion, not a failed watch. A loopback HTTP server stands in for the API
 * server here because a real one cannot be made to answer 429 (or bookmark) on cue.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { KubeApiError, KubeClient } from '../../src/kube/index.js';

const POLICIES = {
  group: 'image.toolkit.fluxcd.io',
  version: 'v1',
  plural: 'imagepolicies',
  kind: 'ImagePolicy',
};

async function server(busy: number) {
  let seen = 0;
  const s = createServer((_req, res) => {
    seen++;
    if (seen <= busy) {
      res.writeHead(429, { 'retry-after': '2', 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ kind: 'Status', reason: 'TooManyRequests', message: 'storage is (re)initializing' }),
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ items: [], metadata: { resourceVersion: '7' } }));
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return { s, url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`, seen: () => seen };
}

const connection = (url: string) => ({
  server: url,
  insecureSkipTlsVerify: false,
  namespace: 'default',
  origin: 'test',
});

test('a 429 is tried again after Retry-After', async () => {
  const api = await server(2);
  const waits: number[] = [];
  const client = new KubeClient(connection(api.url), { sleep: async (ms) => void waits.push(ms) });
  try {
    const list = await client.list(POLICIES);
    assert.equal(list.resourceVersion, '7');
    assert.equal(api.seen(), 3);
    assert.deepEqual(waits, [2000, 2000]);
  } finally {
    await client.close();
    api.s.close();
  }
});

test('ten 429s in a row: the error, with the server message', async () => {
  const api = await server(Infinity);
  const client = new KubeClient(connection(api.url), { sleep: async () => undefined });
  try {
    await assert.rejects(client.list(POLICIES), (err: unknown) => {
      assert.ok(err instanceof KubeApiError);
      assert.equal(err.status, 429);
      assert.match(err.message, /storage is \(re\)initializing/);
      return true;
    });
    assert.equal(api.seen(), 10);
  } finally {
    await client.close();
    api.s.close();
  }
});

test("a watch's BOOKMARK (metadata with a resourceVersion and no name) moves the version on", async () => {
  const line = (o: unknown) => `${JSON.stringify(o)}\n`;
  const s = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write(
      line({
        type: 'ADDED',
        object: { metadata: { name: 'app', namespace: 'flux-system', resourceVersion: '8' } },
      }),
    );
    res.write(
      line({
        type: 'BOOKMARK',
        object: {
          kind: 'ImagePolicy',
          apiVersion: 'image.toolkit.fluxcd.io/v1',
          metadata: { resourceVersion: '12', annotations: { 'k8s.io/initial-events-end': 'true' } },
        },
      }),
    );
    res.end();
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const client = new KubeClient(connection(`http://127.0.0.1:${(s.address() as AddressInfo).port}`));
  try {
    const seen: string[] = [];
    for await (const ev of client.watch(POLICIES, { resourceVersion: '7' }))
      seen.push(
        ev.type === 'BOOKMARK' ? `BOOKMARK ${ev.resourceVersion}` : `${ev.type} ${ev.object.metadata.name}`,
      );
    assert.deepEqual(seen, ['ADDED app', 'BOOKMARK 12']);
  } finally {
    await client.close();
    s.close();
  }
});
