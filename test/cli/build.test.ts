import { test } from 'node:test';
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

const execFileP = promisify(execFile);
const run = async (args: string[]) => {
  try {
    const r = await execFileP(process.execPath, args, { cwd: ROOT });
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

test('npm run build: one entry file and lazily loaded chunks that run validate with the same result as the source', async () => {
  // Inside the checkout (bench/out is ignored by git) so the bundle's external imports resolve.
  const out = join(ROOT, 'bench', 'out', `build-test-${process.pid}`);
  const cfg = await mkdtemp(join(tmpdir(), 'pawl-build-'));
  try {
    await buildCli(out);
    const files = await readdir(join(out, 'cli'));
    assert.ok(files.includes('main.js'));
    const chunks = await readdir(join(out, 'cli', 'chunks'));
    // Each command's module is its own chunk (loaded only when that command runs).
    for (const c of ['validate', 'run', 'setters'])
      assert.ok(
        chunks.some((f) => f.startsWith(`${c}-`)),
        c,
      );
    // better-sqlite3 (native) is imported, not bundled.
    const all = await Promise.all(
      chunks.filter((f) => f.endsWith('.js')).map((f) => readFile(join(out, 'cli', 'chunks', f), 'utf8')),
    );
    assert.ok(all.some((t) => /from"better-sqlite3"|from "better-sqlite3"/.test(t)));

    await writeFile(
      join(cfg, 'objects.yaml'),
      [
        imageObjects('app', 'registry.example/app', 'semver:\n  range: ">=1.0.0"', {}),
        gitObjects().replaceAll('{{GIT_URL}}', 'https://git.example/fleet.git'),
        'apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: bad\n  namespace: flux-system\nspec:\n  imageRepositoryRef:\n    name: app\n  policy:\n    semver:\n      range: "not a range"\n',
      ].join('---\n'),
    );
    const built = await run([join(out, 'cli', 'main.js'), 'validate', '--json', '-c', cfg]);
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
