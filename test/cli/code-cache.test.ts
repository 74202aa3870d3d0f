/**
 * The built CLI's V8 code cache (src/cli/code-cache.ts; docs/performance.md, "The build"): where
 * it lives, that a second start is handed the first one's code and V8 accepts it, that a corrupt
 * or foreign file is ignored and replaced, that a run going further rewrites it, and that it is
 * never fatal. The CommonJS files here stand in for the bundle (test/cli/build.test.ts runs the
 * real one through it); no timings.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Script } from 'node:vm';
import {
  cacheFileName,
  codeCacheDir,
  fnv1a64,
  frame,
  unframe,
  type CacheKey,
} from '../../src/cli/code-cache.js';
import { ROOT } from '../helpers/world.js';

const execFileP = promisify(execFile);
const DRIVER = join(ROOT, 'test', 'helpers', 'code-cache-driver.ts');

/** A bundle whose run() evaluates MODULES "modules" and returns; line 4 throws when THROW is set. */
const BUNDLE = [
  "'use strict';",
  "globalThis[Symbol.for('pawl.modulesEvaluated')] = 0;",
  'function work(n) { let s = 0; for (let i = 0; i < n; i++) s += i; return s; }',
  "function fail() { throw new Error('from the bundle'); }",
  'module.exports = { run() {',
  "  globalThis[Symbol.for('pawl.modulesEvaluated')] = Number(process.env.MODULES ?? 1);",
  '  if (process.env.THROW) fail();',
  "  process.stdout.write(String(work(10)) + '\\n' + __filename + '\\n');",
  '} };',
].join('\n');

async function start(
  file: string,
  env: Record<string, string>,
  command = 'validate',
): Promise<{ code: number; stdout: string; lines: string[]; stderr: string }> {
  try {
    const r = await execFileP(process.execPath, ['--import', 'tsx', DRIVER, file, command], {
      cwd: ROOT,
      env: { ...process.env, PAWL_CODE_CACHE_DEBUG: '1', ...env },
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr, lines: debugLines(r.stderr) };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr, lines: debugLines(e.stderr) };
  }
}

/** `accepted`, `written`, … of each PAWL_CODE_CACHE_DEBUG line. */
const debugLines = (stderr: string): string[] =>
  [...stderr.matchAll(/^pawl: code cache: (\S+)/gm)].map((m) => m[1]!);

async function scratch(): Promise<{ dir: string; bundle: string; cache: string; done: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'pawl-code-cache-'));
  const bundle = join(dir, 'pawl.cjs');
  await writeFile(bundle, BUNDLE);
  return { dir, bundle, cache: join(dir, 'cache'), done: () => rm(dir, { recursive: true, force: true }) };
}

test('the cache directory: PAWL_CODE_CACHE=0 turns it off, PAWL_CODE_CACHE_DIR, XDG_CACHE_HOME, then ~/.cache', () => {
  const home = () => '/home/u';
  for (const off of ['0', 'off', 'false', 'no', 'OFF'])
    assert.equal(codeCacheDir({ PAWL_CODE_CACHE: off, PAWL_CODE_CACHE_DIR: '/c' }, home), null, off);
  assert.equal(codeCacheDir({ PAWL_CODE_CACHE_DIR: '/c', XDG_CACHE_HOME: '/x' }, home), '/c');
  assert.equal(codeCacheDir({ XDG_CACHE_HOME: '/x' }, home), '/x/pawl/code-cache');
  assert.equal(codeCacheDir({}, home), '/home/u/.cache/pawl/code-cache');
  // No home (an arbitrary uid in a container): no cache, no error.
  assert.equal(
    codeCacheDir({}, () => {
      throw new Error('no home');
    }),
    null,
  );
  assert.equal(
    codeCacheDir({}, () => ''),
    null,
  );
});

test("a cache file's name: the command, then 64 bits of FNV-1a over what V8 would refuse another's cache for", () => {
  // FNV-1a's published 32-bit values for "" and "a" (the first half); the second half from another basis.
  assert.equal(fnv1a64('').slice(0, 8), '811c9dc5');
  assert.equal(fnv1a64('a').slice(0, 8), 'e40c292c');
  assert.match(fnv1a64('a'), /^[0-9a-f]{16}$/);
  const key: CacheKey = {
    bundleHash: 'b1',
    command: 'run',
    flags: ['--no-opt'],
    execArgv: [],
    nodeOptions: undefined,
  };
  const name = cacheFileName(key);
  assert.match(name, /^run-[0-9a-f]{16}\.bin$/);
  assert.equal(cacheFileName({ ...key }), name, 'the same combination, the same file');
  const others = [
    { ...key, bundleHash: 'b2' },
    { ...key, flags: [] },
    { ...key, execArgv: ['--inspect'] },
    { ...key, nodeOptions: '--max-old-space-size=100' },
  ].map((k) => cacheFileName(k));
  assert.equal(new Set([name, ...others]).size, 5, 'each other combination its own file');
  assert.match(cacheFileName({ ...key, command: 'setters apply' }), /^setters_apply-/);
});

test('a cache file holds its length and CRC-32: any truncation or flipped byte reads as no file', () => {
  const payload = new Script('function f() { return 1 } f()').createCachedData();
  const file = frame({ payload, modules: 7 });
  const back = unframe(file);
  assert.ok(back);
  assert.ok(back.payload.equals(payload));
  assert.equal(back.modules, 7);
  for (const cut of [0, 4, 19, 20, file.length - 1])
    assert.equal(unframe(file.subarray(0, cut)), null, `cut ${cut}`);
  for (const at of [0, 8, 12, 20, file.length - 1]) {
    const bad = Buffer.from(file);
    bad[at] = bad[at]! ^ 0xff;
    // The module count is not checked (a wrong one only writes the cache once more).
    assert.equal(unframe(bad), null, `byte ${at}`);
  }
  assert.equal(unframe(Buffer.concat([file, Buffer.from([0])])), null, 'a byte more');
});

test('the second start is handed the first one’s code and V8 accepts it; the output is the same', async () => {
  const s = await scratch();
  try {
    const env = { PAWL_CODE_CACHE_DIR: s.cache };
    const first = await start(s.bundle, env);
    assert.equal(first.code, 0, first.stderr);
    assert.deepEqual(first.lines, ['absent', 'written']);
    const files = await readdir(s.cache);
    assert.equal(files.length, 1);
    assert.match(files[0]!, /^validate-[0-9a-f]+\.bin$/);
    const second = await start(s.bundle, env);
    assert.deepEqual(second.lines, ['accepted'], second.stderr);
    assert.equal(second.stdout, first.stdout);
    // __filename is the bundle's own path, as node's loader gives it.
    assert.equal(second.stdout, `45\n${s.bundle}\n`);
    // Another command has a file of its own.
    const other = await start(s.bundle, env, 'run');
    assert.deepEqual(other.lines, ['absent', 'written']);
    assert.equal((await readdir(s.cache)).length, 2);
  } finally {
    await s.done();
  }
});

test('a corrupt cache file is ignored and replaced; so is a foreign one V8 refuses', async () => {
  const s = await scratch();
  try {
    const env = { PAWL_CODE_CACHE_DIR: s.cache };
    await start(s.bundle, env);
    const [name] = await readdir(s.cache);
    const path = join(s.cache, name!);
    const good = await readFile(path);

    // Half a file (what a crash mid-write would leave, were it not renamed into place).
    await writeFile(path, good.subarray(0, good.length >> 1));
    const half = await start(s.bundle, env);
    assert.equal(half.code, 0, half.stderr);
    assert.deepEqual(half.lines, ['corrupt', 'written']);
    assert.ok(unframe(await readFile(path)), 'a whole file again');
    assert.deepEqual((await start(s.bundle, env)).lines, ['accepted']);

    // A whole, well-framed file made for other code: V8's own check refuses it.
    const foreign = new Script('var elsewhere = 1;', { filename: s.bundle }).createCachedData();
    await writeFile(path, frame({ payload: foreign, modules: 1 }));
    const refused = await start(s.bundle, env);
    assert.equal(refused.code, 0, refused.stderr);
    assert.deepEqual(refused.lines, ['rejected', 'written']);
    assert.equal(refused.stdout, `45\n${s.bundle}\n`);
    assert.deepEqual((await start(s.bundle, env)).lines, ['accepted']);

    // Garbage.
    await writeFile(path, 'not a cache');
    assert.deepEqual((await start(s.bundle, env)).lines, ['corrupt', 'written']);
    assert.deepEqual((await start(s.bundle, env)).lines, ['accepted']);
  } finally {
    await s.done();
  }
});

test('a run that evaluates more modules than the one that wrote the cache writes it again', async () => {
  const s = await scratch();
  try {
    const env = { PAWL_CODE_CACHE_DIR: s.cache };
    assert.deepEqual((await start(s.bundle, { ...env, MODULES: '3' })).lines, ['absent', 'written']);
    assert.deepEqual((await start(s.bundle, { ...env, MODULES: '3' })).lines, ['accepted']);
    assert.deepEqual((await start(s.bundle, { ...env, MODULES: '2' })).lines, ['accepted']);
    assert.deepEqual((await start(s.bundle, { ...env, MODULES: '5' })).lines, ['accepted', 'written']);
    const [name] = await readdir(s.cache);
    assert.equal(unframe(await readFile(join(s.cache, name!)))?.modules, 5);
    assert.deepEqual((await start(s.bundle, { ...env, MODULES: '5' })).lines, ['accepted']);
  } finally {
    await s.done();
  }
});

test('never fatal: off, a directory that cannot be made, a stale file of another bundle pruned', async () => {
  const s = await scratch();
  try {
    const off = await start(s.bundle, { PAWL_CODE_CACHE: '0', PAWL_CODE_CACHE_DIR: s.cache });
    assert.equal(off.code, 0);
    assert.deepEqual(off.lines, ['off']);
    await assert.rejects(readdir(s.cache), /ENOENT/);

    // A file where the directory would be (a read-only or odd filesystem alike).
    const blocked = join(s.dir, 'blocked');
    await writeFile(blocked, '');
    const r = await start(s.bundle, { PAWL_CODE_CACHE_DIR: join(blocked, 'cache') });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `45\n${s.bundle}\n`);
    assert.deepEqual(r.lines, ['absent', 'not']);

    // The same command's file for another bundle or node goes when this one is written.
    const env = { PAWL_CODE_CACHE_DIR: s.cache };
    await start(s.bundle, env);
    const [mine] = await readdir(s.cache);
    await writeFile(join(s.cache, 'validate-0123456789abcdef0123.bin'), 'old');
    await writeFile(join(s.cache, 'run-0123456789abcdef0123.bin'), 'another command');
    await rm(join(s.cache, mine!));
    await start(s.bundle, env);
    assert.deepEqual((await readdir(s.cache)).sort(), [mine, 'run-0123456789abcdef0123.bin'].sort());
  } finally {
    await s.done();
  }
});

test('stack traces name the bundle’s own lines (the wrapper adds none)', async () => {
  const s = await scratch();
  try {
    for (const pass of ['no cache', 'cache accepted']) {
      const r = await start(s.bundle, { PAWL_CODE_CACHE_DIR: s.cache, THROW: '1' });
      assert.deepEqual(r.lines, [pass === 'no cache' ? 'absent' : 'accepted']);
      assert.notEqual(r.code, 0, pass);
      assert.match(r.stderr, /Error: from the bundle/);
      // fail()'s `new Error` is on line 4, column 25, in the file as written.
      assert.ok(r.stderr.includes(`${s.bundle}:4:25`), `${pass}: ${r.stderr}`);
      // The run that throws wrote nothing; this one writes the cache the second pass reads.
      if (pass === 'no cache') await start(s.bundle, { PAWL_CODE_CACHE_DIR: s.cache });
    }
  } finally {
    await s.done();
  }
});
