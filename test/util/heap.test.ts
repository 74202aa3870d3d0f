import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  DAEMON_RUNNING_V8_FLAGS,
  DAEMON_START_V8_FLAGS,
  ONE_SHOT_V8_FLAGS,
  deferOptimizer,
  SMALL_HEAP_FLAGS,
  heapFlagsGiven,
  optimizerFlagsGiven,
  tuneHeap,
} from '../../src/util/index.js';

test('--heap small sets the two V8 flags, --heap default none', () => {
  const set: string[] = [];
  assert.deepEqual(
    tuneHeap('default', (f) => void set.push(f)),
    [] as string[],
  );
  assert.equal(set.length, 0);
  assert.deepEqual(
    tuneHeap('small', (f) => void set.push(f)),
    [...SMALL_HEAP_FLAGS],
  );
  assert.deepEqual(set, ['--semi-space-growth-factor=1', '--heap-growing-percent=50']);
});

test('this node’s V8 knows both flags (it would name an unknown one, as it does the sentinel)', () => {
  const flags = [...SMALL_HEAP_FLAGS, ...ONE_SHOT_V8_FLAGS, '--no-such-flag-for-pawl'];
  const script = `const v8 = require('node:v8'); for (const f of ${JSON.stringify(flags)}) v8.setFlagsFromString(f);`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
  const said = r.stdout + r.stderr;
  assert.match(said, /unrecognized flag --no-such-flag-for-pawl/);
  for (const f of [...SMALL_HEAP_FLAGS, ...ONE_SHOT_V8_FLAGS])
    assert.ok(!said.includes(f.split('=')[0]!), `${f} is known: ${said}`);
});

test('flags a person gives node are kept', () => {
  assert.equal(heapFlagsGiven([], ''), false);
  assert.equal(heapFlagsGiven(['--max-semi-space-size=8'], ''), true);
  assert.equal(heapFlagsGiven([], '--max_semi_space_size=4 --max-old-space-size=256'), true);
  assert.equal(heapFlagsGiven(['--heap-growing-percent=20'], undefined), true);
  assert.equal(heapFlagsGiven(['--max-old-space-size=256'], ''), false);
});

test('optimizer flags a person gives node are kept', () => {
  assert.equal(optimizerFlagsGiven([], ''), false);
  assert.equal(optimizerFlagsGiven(['--opt'], ''), true);
  assert.equal(optimizerFlagsGiven([], '--no-turbofan'), true);
  assert.equal(optimizerFlagsGiven(['--optimize-for-size'], ''), false);
  assert.equal(optimizerFlagsGiven(['--max-old-space-size=256'], undefined), false);
});

test('the daemon starts without the optimizer and turns it on once, unless node was given optimizer flags', () => {
  const set: string[] = [];
  const on = deferOptimizer(false, (f) => void set.push(f));
  assert.deepEqual(set, ['--no-opt']);
  assert.ok(on);
  assert.deepEqual(on(), ['--opt']);
  assert.deepEqual(on(), [] as string[], 'only once');
  assert.deepEqual(set, ['--no-opt', '--opt']);
  const none: string[] = [];
  assert.equal(
    deferOptimizer(true, (f) => void none.push(f)),
    null,
  );
  assert.equal(none.length, 0);
});

test('this V8 optimizes nothing after the start flags and optimizes hot functions once they are undone', () => {
  // %GetOptimizationStatus's bit 4 (16): the function is optimized by TurboFan.
  const script = `
    const v8 = require('node:v8');
    for (const f of ${JSON.stringify(DAEMON_START_V8_FLAGS)}) v8.setFlagsFromString(f);
    const hot = (a) => { let s = 0; for (let i = 0; i < a.length; i++) s += a[i] * 2; return s; };
    const arr = Array.from({ length: 1000 }, (_, i) => i);
    for (let i = 0; i < 20000; i++) hot(arr);
    const before = (%GetOptimizationStatus(hot) & 16) !== 0;
    for (const f of ${JSON.stringify(DAEMON_RUNNING_V8_FLAGS)}) v8.setFlagsFromString(f);
    for (let i = 0; i < 20000; i++) hot(arr);
    const after = (%GetOptimizationStatus(hot) & 16) !== 0;
    console.log(JSON.stringify({ before, after }));
  `;
  const r = spawnSync(process.execPath, ['--allow-natives-syntax', '-e', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), { before: false, after: true });
});
