/**
 * What the real `pawl serve` defers until its first pass is done (docs/serve.md, "Start"): the
 * listeners' apps are built on the first request or after that pass, whichever comes first, and
 * V8's optimizer comes on after it. A request before the pass gets the app's own answer.
 */
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { startServe, type LogRecord, type ServeProcess } from '../helpers/serve.js';
import type { World } from '../helpers/world.js';
import { oneAppWorld } from './fixtures.js';

let w: World | undefined;
let serve: ServeProcess | undefined;
afterEach(async () => {
  await serve?.stop('SIGKILL');
  await w?.close();
  serve = undefined;
  w = undefined;
});

const built = (records: LogRecord[], listener: string) =>
  records.filter((r) => r.msg === 'listener app built' && r.listener === listener);

test('after the first pass: both apps built and the optimizer on, after the pass', async () => {
  w = await oneAppWorld({ tags: ['1.0.0', '1.1.0'] });
  serve = await startServe({ configDir: w.configDir, stateDir: w.stateDir });
  const pass = await serve.waitForLog((r) => r.msg === 'pass' && r.result === 'pushed', 'the first pass');
  const on = await serve.waitForLog((r) => r.msg === 'optimizer on', 'the optimizer on');
  assert.deepEqual(on.v8Flags, ['--opt']);
  await serve.waitForLog((r) => built([r], 'admin').length > 0, 'the admin app built');
  const records = serve.records();
  for (const listener of ['webhooks', 'admin']) {
    const b = built(records, listener);
    assert.equal(b.length, 1, `${listener} built once`);
    assert.equal(b[0]!.reason, 'first pass');
    assert.ok(records.indexOf(b[0]!) > records.indexOf(pass), `${listener} built after the pass`);
  }
  assert.ok(records.indexOf(on) > records.indexOf(pass));
  const health = await serve.adminGet('/healthz');
  assert.deepEqual(health, { status: 200, json: { status: 'ok' } });
});

test('a request before the first pass builds its app and gets its answer; the pass has not ended', async () => {
  w = await oneAppWorld({ proxy: true, tags: ['1.0.0', '1.1.0'] });
  // The scan never answers: the first pass does not end while the test runs.
  w.proxy!.addFault({ kind: 'tags', repo: 'team/app', action: { hang: true } });
  serve = await startServe({ configDir: w.configDir, stateDir: w.stateDir });
  assert.equal(built(serve.records(), 'admin').length, 0, 'nothing built at start');
  const health = await serve.adminGet<{ status: string }>('/healthz');
  assert.deepEqual(health, { status: 200, json: { status: 'ok' } });
  const metrics = await serve.metrics();
  assert.match(metrics, /^# TYPE pawl_scans_total counter$/m);
  const hook = await fetch(serve.hookUrl('/hook/nothing-here'), { method: 'POST', body: '{}' });
  assert.equal(hook.status, 404);
  assert.deepEqual(await hook.json(), { error: 'no receiver at this path' });
  for (const listener of ['webhooks', 'admin']) {
    const b = await serve.waitForLog((r) => built([r], listener).length > 0, `the ${listener} app built`);
    assert.equal(b.reason, 'request');
  }
  const records = serve.records();
  for (const listener of ['webhooks', 'admin']) assert.equal(built(records, listener).length, 1);
  assert.ok(!records.some((r) => r.msg === 'pass'), 'the first pass is still going');
  assert.ok(!records.some((r) => r.msg === 'optimizer on'), 'no optimizer before the first pass');
});

test('node given optimizer flags of its own keeps them', async () => {
  w = await oneAppWorld({ tags: ['1.0.0', '1.1.0'] });
  serve = await startServe({ configDir: w.configDir, stateDir: w.stateDir, nodeArgs: ['--opt'] });
  await serve.waitForLog((r) => r.msg === 'pass' && r.result === 'pushed', 'the first pass');
  await serve.waitForLog((r) => built([r], 'admin').length > 0, 'the admin app built');
  assert.ok(!serve.records().some((r) => r.msg === 'optimizer on'));
});
