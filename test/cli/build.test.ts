import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { buildCli } from '../../scripts/build.js';
import { ROOT, gitObjects, imageObjects, startWorld } from '../helpers/world.js';
import { pushTags } from '../helpers/push.js';
import { DEPLOY } from '../serve/fixtures.js';
import { startServe } from '../helpers/serve.js';

const execFileP = promisify(execFile);
// The built CLI's code cache in a directory of the test's own, not the user's ~/.cache.
const CODE_CACHE = join(tmpdir(), `pawl-build-test-code-cache-${process.pid}`);
after(() => rm(CODE_CACHE, { recursive: true, force: true }));
const run = async (args: string[], env: Record<string, string> = {}) => {
  try {
    const r = await execFileP(process.execPath, args, {
      cwd: ROOT,
      env: { ...process.env, PAWL_CODE_CACHE_DIR: CODE_CACHE, ...env },
    });
    return { code: 0, ...r };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
};

test('pawl --version answered by bin/pawl.js is the package version, and the one the CLI itself prints', async () => {
  const { version } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
  for (const flag of ['--version', '-V']) {
    const fast = await run([join(ROOT, 'bin', 'pawl.js'), flag]);
    assert.equal(fast.code, 0);
    assert.equal(fast.stdout, `${version}\n`, flag);
  }
  // Through commander (another argument present, so the fast path is not taken).
  const full = await run(['--import', 'tsx', join(ROOT, 'src', 'cli', 'main.ts'), '--version', '--json']);
  assert.equal(full.code, 0);
  assert.equal(full.stdout, `${version}\n`);
});

test('npm run build: the launcher and one CommonJS bundle that run validate with the same result as the source, through the code cache', async () => {
  // Inside the checkout (bench/out is ignored by git) so the bundle's external imports resolve.
  const out = join(ROOT, 'bench', 'out', `build-test-${process.pid}`);
  const cfg = await mkdtemp(join(tmpdir(), 'pawl-build-'));
  const cache = await mkdtemp(join(tmpdir(), 'pawl-build-cache-'));
  try {
    await buildCli(out);
    const files = await readdir(join(out, 'cli'));
    for (const f of ['main.js', 'main.js.map', 'pawl.cjs', 'pawl.cjs.map']) assert.ok(files.includes(f), f);
    const bundle = await readFile(join(out, 'cli', 'pawl.cjs'), 'utf8');
    // better-sqlite3 (native) is required, not bundled; the launcher bundles none of pawl's dependencies.
    assert.match(bundle, /require\("better-sqlite3"\)/);
    const launcher = await readFile(join(out, 'cli', 'main.js'), 'utf8');
    assert.ok(launcher.length < 20_000, `launcher ${launcher.length} bytes`);
    assert.doesNotMatch(launcher, /commander|pino|zod/);
    // Nor node:crypto: loading it cost every command's start ~4 ms (its cache file's name is FNV-1a).
    assert.doesNotMatch(launcher, /node:crypto/);
    // ASCII, which the launcher reads as Latin-1 (src/cli/code-cache.ts).
    assert.doesNotMatch(bundle, /[^\x00-\x7f]/);
    // Strict mode survives the banner, and the module count is in place (scripts/build.ts).
    assert.match(bundle, /^'use strict';/);
    assert.match(bundle, /fn\[__pawlInitFirstKey__\(fn\)\]/);

    await writeFile(
      join(cfg, 'objects.yaml'),
      [
        imageObjects('app', 'registry.example/app', 'semver:\n  range: ">=1.0.0"', {}),
        gitObjects().replaceAll('{{GIT_URL}}', 'https://git.example/fleet.git'),
        'apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: bad\n  namespace: flux-system\nspec:\n  imageRepositoryRef:\n    name: app\n  policy:\n    semver:\n      range: "not a range"\n',
      ].join('---\n'),
    );
    const debug = { PAWL_CODE_CACHE_DIR: cache, PAWL_CODE_CACHE_DEBUG: '1' };
    const built = await run([join(out, 'cli', 'main.js'), 'validate', '--json', '-c', cfg], debug);
    // The second start is handed the first one's compiled code, and V8 takes it: same output, same exit.
    const again = await run([join(out, 'cli', 'main.js'), 'validate', '--json', '-c', cfg], debug);
    assert.match(built.stderr, /code cache: absent /);
    assert.match(built.stderr, /code cache: written /);
    assert.match(again.stderr, /code cache: accepted /);
    assert.doesNotMatch(again.stderr, /written/);
    assert.equal(again.code, built.code);
    assert.equal(again.stdout, built.stdout);
    const source = await run([
      '--import',
      'tsx',
      join(ROOT, 'src', 'cli', 'main.ts'),
      'validate',
      '--json',
      '-c',
      cfg,
    ]);
    assert.equal(built.code, 2);
    assert.equal(built.code, source.code);
    assert.equal(built.stdout, source.stdout);
    assert.match(built.stdout, /not a valid semver range/);
  } finally {
    await rm(out, { recursive: true, force: true });
    await rm(cfg, { recursive: true, force: true });
    await rm(cache, { recursive: true, force: true });
  }
});

test('the bundle runs a whole pass: registry requests (undici), the guard, SQLite, commit and push', async () => {
  const out = join(ROOT, 'bench', 'out', `build-run-test-${process.pid}`);
  const w = await startWorld({
    files: { 'apps/app.yaml': DEPLOY },
    config: {
      'git.yaml': gitObjects(),
      'app.yaml': imageObjects('app', '{{REGISTRY}}/team/app', 'semver:\n  range: ">=1.0.0"'),
    },
  });
  try {
    await pushTags(w.registry.url, 'team/app', ['1.0.0', '1.1.0']);
    await buildCli(out);
    const built = await run([
      join(out, 'cli', 'main.js'),
      'run',
      '--json',
      '-c',
      w.configDir,
      '--state-dir',
      w.stateDir,
    ]);
    assert.equal(built.code, 0, built.stderr);
    const report = JSON.parse(built.stdout) as {
      repositories: { name: string; scanned: boolean; error: string | null }[];
      automations: { result: string; commit: string | null }[];
    };
    assert.deepEqual(
      report.repositories.map((r) => [r.name, r.scanned, r.error]),
      [['flux-system/app', true, null]],
    );
    assert.equal(report.automations[0]!.result, 'pushed');
    const log = await w.git.log(w.repoName, 'main');
    assert.equal(log[0]!.sha, report.automations[0]!.commit);
    assert.match(await w.git.show(w.repoName, log[0]!.sha, 'apps/app.yaml'), /team\/app:1\.1\.0 #/);
  } finally {
    await rm(out, { recursive: true, force: true });
    await w.close();
  }
});

test('the built daemon writes its code cache after its first pass, before the optimizer is on, and the next start takes it', async () => {
  const out = join(ROOT, 'bench', 'out', `build-serve-test-${process.pid}`);
  const work = await mkdtemp(join(tmpdir(), 'pawl-build-serve-'));
  const cache = join(work, 'cache');
  try {
    await buildCli(out);
    await writeFile(
      join(work, 'objects.yaml'),
      imageObjects('app', '127.0.0.1:9/app', 'semver:\n  range: ">=1.0.0"', {}),
    );
    const env = { PAWL_CODE_CACHE_DIR: cache, PAWL_CODE_CACHE_DEBUG: '1' };
    for (const pass of ['first', 'second']) {
      const serve = await startServe({
        entry: join(out, 'cli', 'main.js'),
        configDir: work,
        stateDir: join(work, `state-${pass}`),
        env,
      });
      try {
        await serve.waitForLog((r) => r.msg === 'optimizer on', 'optimizer on');
        if (pass === 'first') {
          assert.match(serve.output(), /code cache: absent /);
          assert.match(serve.output(), /code cache: written .*serve-[0-9a-f]+\.bin/);
        } else {
          // Made under the flags the launcher set before compiling (src/cli/start-flags.ts), which
          // the daemon set again at its start: V8 takes it.
          assert.match(serve.output(), /code cache: accepted /);
          assert.doesNotMatch(serve.output(), /code cache: written/);
        }
      } finally {
        await serve.stop();
      }
    }
    assert.deepEqual((await readdir(cache)).filter((f) => f.startsWith('serve-')).length, 1);
  } finally {
    await rm(out, { recursive: true, force: true });
    await rm(work, { recursive: true, force: true });
  }
});
