/**
 * The cap on webhook requests being verified and queued at once (`maxInFlight`): exactly N are
 * let in, the N+1st is answered 503 with Retry-After while they hold their places, and a place
 * that is given back lets the next one in. Against the receiver listener itself (Fastify's
 * inject, no sockets) with a work queue that holds each request until the test lets it go.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config/load.js';
import { receiverApp } from '../../src/serve/http.js';
import { ServeMetrics } from '../../src/serve/metrics.js';
import { receiverHookPath } from '../../src/serve/receivers/index.js';
import { buildRoutes } from '../../src/serve/webhooks.js';
import type { ListenerView } from '../../src/serve/view.js';
import { silentLogger } from '../../src/util/index.js';
import { configDir } from '../config/fixtures.js';

const CONFIG = `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: app, namespace: apps}
spec:
  image: ghcr.io/org/app
  interval: 5m
---
apiVersion: notification.toolkit.fluxcd.io/v1
kind: Receiver
metadata: {name: hook, namespace: apps}
spec:
  type: generic
  secretRef: {name: hook-token}
  resources:
    - {kind: ImageRepository, name: app}
---
apiVersion: v1
kind: Secret
metadata: {name: hook-token, namespace: apps}
stringData: {token: s3cret-token}
`;

const CAP = 3;
let view: ListenerView;
let cleanup: () => Promise<void>;
/** The queued requests, each waiting for the test to let it go. */
const held: (() => void)[] = [];
let arrived: (() => void) | null = null;

before(async () => {
  const dir = await configDir({ 'all.yaml': CONFIG });
  cleanup = dir.cleanup;
  const loaded = await loadConfig([dir.dir]);
  assert.deepEqual(
    loaded.problems.filter((p) => p.severity === 'error'),
    [],
    'the fixture is valid',
  );
  const current = { config: loaded.config, routes: buildRoutes(loaded.config, silentLogger) };
  // Only what the receiver listener reads: the configuration, the log, the metrics, the queue.
  view = {
    log: silentLogger,
    metrics: new ServeMetrics(),
    stopping: false,
    current,
    trigger: (repositories: readonly string[]) =>
      new Promise((resolve) => {
        held.push(() => resolve({ automations: [], repositories: [...repositories] }));
        arrived?.();
      }),
  } as unknown as ListenerView;
});
after(() => cleanup());

/** Resolves once `n` requests are held in the queue. */
function heldCount(n: number): Promise<void> {
  if (held.length >= n) return Promise.resolve();
  return new Promise((resolve) => {
    arrived = () => {
      if (held.length >= n) {
        arrived = null;
        resolve();
      }
    };
  });
}

test(`maxInFlight ${CAP}: ${CAP} requests are let in at once, the ${CAP + 1}th is answered 503 until one ends`, async () => {
  const app = receiverApp(view, { maxInFlight: CAP });
  const url = receiverHookPath('s3cret-token', 'hook', 'apps');
  let n = 0;
  // Each body differs: the same generic body again would be a replay.
  const post = () =>
    app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/json' },
      payload: `{"n":${n++}}`,
    });
  try {
    const first = Array.from({ length: CAP }, () => post());
    await heldCount(CAP);
    const refused = await post();
    assert.equal(refused.statusCode, 503, `the ${CAP + 1}th request is refused while ${CAP} are in flight`);
    assert.equal(refused.headers['retry-after'], '1');
    assert.match(refused.body, /too many webhook requests at once/);
    assert.equal(held.length, CAP, 'the refused request queued nothing');

    held.shift()!();
    const done = await first[0]!;
    assert.equal(done.statusCode, 202, 'a request let in is accepted');
    const next = post();
    // A refusal here would leave heldCount waiting for ever: it fails the test instead.
    await Promise.race([
      heldCount(CAP),
      next.then((a) => assert.fail(`the place given back was not: answered ${a.statusCode}`)),
    ]);
    assert.equal(held.length, CAP, 'the place given back lets exactly one more in');
    const again = await post();
    assert.equal(again.statusCode, 503, 'and the cap holds again');

    for (const release of held.splice(0)) release();
    const answers = await Promise.all([...first.slice(1), next]);
    assert.deepEqual(
      answers.map((a) => a.statusCode),
      Array(CAP).fill(202),
    );
  } finally {
    for (const release of held.splice(0)) release();
    await app.close();
  }
});
