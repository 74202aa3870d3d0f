/**
 * The daemon's listeners bind their sockets at start and build their apps (fastify, its routes)
 * on the first request or when the first pass is done (src/serve/listener.ts): a request that
 * comes first waits for the app and gets its answer, requests during the build all get theirs,
 * a failed build is answered 500 and tried again, and a listener stopped before it built
 * anything answers 503 without building.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lookup } from 'node:dns/promises';
import { request, type RequestListener } from 'node:http';
import { ADMIN_SERVER, LazyListener, type BuildApp } from '../../src/serve/listener.js';
import { silentLogger } from '../../src/util/index.js';

interface Built {
  builds: number;
  fail: boolean;
  release: (() => void) | null;
}

/** An app answering `{ path }`, whose build waits for `release` when one is set. */
function app(state: Built): BuildApp {
  return async (attach) => {
    state.builds++;
    if (state.release) await new Promise<void>((r) => (state.release = r));
    if (state.fail) throw new Error('the module did not load');
    const handler: RequestListener = (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ path: req.url }));
    };
    attach(handler);
    return { ready: async () => undefined, close: async () => undefined };
  };
}

/** The admin listener over `app(state)`, as most tests here use it. */
function adminListener(state: Built): LazyListener {
  return new LazyListener({ name: 'admin', server: ADMIN_SERVER, log: silentLogger, build: app(state) });
}

async function get(at: string, path: string, body?: string): Promise<{ status: number; json: unknown }> {
  const [host, port] = at.split(':') as [string, string];
  return new Promise((resolve, reject) => {
    const req = request({ host, port: Number(port), path, method: body ? 'POST' : 'GET' }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) as unknown }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('nothing is built until the first request, which gets the app’s answer', async () => {
  const state: Built = { builds: 0, fail: false, release: null };
  const l = adminListener(state);
  const at = await l.listen({ host: '127.0.0.1', port: 0 });
  assert.match(at, /^127\.0\.0\.1:\d+$/);
  assert.equal(l.built, false);
  assert.equal(state.builds, 0);
  assert.deepEqual(await get(at, '/healthz'), { status: 200, json: { path: '/healthz' } });
  assert.equal(l.built, true);
  assert.deepEqual(await get(at, '/readyz'), { status: 200, json: { path: '/readyz' } });
  assert.equal(state.builds, 1);
  await l.close();
});

test('requests that arrive during the build wait for it, bodies and all; the app is built once', async () => {
  const state: Built = { builds: 0, fail: false, release: () => undefined };
  const l = new LazyListener({
    name: 'webhooks',
    server: ADMIN_SERVER,
    log: silentLogger,
    build: app(state),
  });
  const at = await l.listen({ host: '127.0.0.1', port: 0 });
  const answers = Promise.all([get(at, '/hook/a', '{"x":1}'), get(at, '/hook/b'), get(at, '/hook/c', 'y')]);
  while (state.builds === 0) await new Promise((r) => setTimeout(r, 5));
  state.release!();
  assert.deepEqual(
    (await answers).map((a) => a.json),
    [{ path: '/hook/a' }, { path: '/hook/b' }, { path: '/hook/c' }],
  );
  assert.equal(state.builds, 1);
  await l.close();
});

test('warm builds the app before any request (after the first pass)', async () => {
  const state: Built = { builds: 0, fail: false, release: null };
  const l = adminListener(state);
  const at = await l.listen({ host: '127.0.0.1', port: 0 });
  await l.warm();
  assert.equal(l.built, true);
  assert.deepEqual(await get(at, '/x'), { status: 200, json: { path: '/x' } });
  assert.equal(state.builds, 1);
  await l.close();
});

test('a failed build answers 500 with the reason, and the next request tries again', async () => {
  const state: Built = { builds: 0, fail: true, release: null };
  const l = adminListener(state);
  const at = await l.listen({ host: '127.0.0.1', port: 0 });
  const failed = await get(at, '/healthz');
  assert.equal(failed.status, 500);
  assert.match(
    (failed.json as { error: string }).error,
    /the admin listener could not start: the module did not load/,
  );
  state.fail = false;
  assert.deepEqual(await get(at, '/healthz'), { status: 200, json: { path: '/healthz' } });
  assert.equal(state.builds, 2);
  await l.close();
});

test('an address in use is the error of listen, as before', async () => {
  const state: Built = { builds: 0, fail: false, release: null };
  const a = adminListener(state);
  const at = await a.listen({ host: '127.0.0.1', port: 0 });
  const b = adminListener(state);
  await assert.rejects(b.listen({ host: '127.0.0.1', port: Number(at.split(':')[1]) }), /EADDRINUSE/);
  await Promise.all([a.close(), b.close()]);
});

test('stopped before anything was built: closed without building the app', async () => {
  const state: Built = { builds: 0, fail: false, release: null };
  const l = new LazyListener({
    name: 'webhooks',
    server: ADMIN_SERVER,
    log: silentLogger,
    build: app(state),
  });
  const at = await l.listen({ host: '127.0.0.1', port: 0 });
  await l.close();
  await l.warm();
  await assert.rejects(get(at, '/hook/x'), /ECONNREFUSED/);
  assert.equal(state.builds, 0);
});

test('localhost is every address it resolves to, on one port, as fastify listened', async () => {
  const state: Built = { builds: 0, fail: false, release: null };
  const l = adminListener(state);
  const at = await l.listen({ host: 'localhost', port: 0 });
  const port = Number(/:(\d+)$/.exec(at)![1]);
  for (const { address, family } of await lookup('localhost', { all: true })) {
    const host = family === 6 ? `[${address}]` : address;
    const res = await fetch(`http://${host}:${port}/x`);
    assert.deepEqual(await res.json(), { path: '/x' }, `answered on ${address}`);
  }
  await l.close();
});
