/**
 * The npm package, the way a user installs it: `npm pack` (prepack builds dist/ and the bundled
 * demo), then a global install of the tarball into an empty prefix, the npm registry reachable and
 * the local npm cache preferred. From there `pawl --version` and `pawl-demo` must work with
 * nothing of the checkout around. The pack runs in a copy of the checkout, so dist/ is not
 * written into the work tree.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, readdir, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../helpers/world.js';

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], cwd: string, timeoutMs = 15 * 60_000): Promise<Result> {
  return new Promise((resolve) =>
    execFile(cmd, args, { cwd, maxBuffer: 32 << 20, timeout: timeoutMs }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr }),
    ),
  );
}

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
let work = '';
let tarball = '';
let prefix = '';

before(async () => {
  work = await mkdtemp(join(tmpdir(), 'pawl-package-test-'));
  const checkout = join(work, 'checkout');
  await mkdir(checkout);
  for (const entry of [
    'package.json',
    'package-lock.json',
    'README.md',
    'tsconfig.json',
    'web',
    'bin',
    'src',
    'scripts',
    'test/helpers',
  ])
    await cp(join(ROOT, entry), join(checkout, entry), { recursive: true });
  await symlink(join(ROOT, 'node_modules'), join(checkout, 'node_modules'));
  const pack = await run(npm, ['pack', '--json', '--pack-destination', work], checkout);
  assert.equal(pack.code, 0, `npm pack:\n${pack.stderr}`);
  const [info] = JSON.parse(pack.stdout) as { filename: string; files: { path: string }[] }[];
  tarball = join(work, info!.filename);
  prefix = join(work, 'prefix');
  // An empty prefix, installed the way the README says to install globally.
  const install = await run(
    npm,
    ['install', '--global', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', tarball],
    work,
  );
  assert.equal(install.code, 0, `npm install -g:\n${install.stdout}\n${install.stderr}`);
});

after(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

test('the tarball holds the compiled CLI and the bundled demo, not the sources', async () => {
  const installed = join(prefix, 'lib', 'node_modules', 'pawl');
  const top = (await readdir(installed)).sort();
  assert.deepEqual(
    top.filter((f) => f !== 'node_modules'),
    ['README.md', 'bin', 'dist', 'package.json'],
  );
  await readFile(join(installed, 'dist', 'cli', 'main.js'));
  await readFile(join(installed, 'dist', 'demo', 'demo.js'));
  // The native module was built for this Node: SQLite must open.
  const sqlite = await run(
    process.execPath,
    [
      '-e',
      "const D = require('better-sqlite3'); console.log(new D(':memory:').prepare('select 1 v').get().v)",
    ],
    installed,
  );
  assert.equal(sqlite.stdout.trim(), '1', sqlite.stderr);
});

test('pawl --version from the global install', async () => {
  const { version } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
  const r = await run(join(prefix, 'bin', 'pawl'), ['--version'], work);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout.trim(), version);
});

test('pawl-demo from the global install: one pushed commit, a newer hand-written tag kept', async () => {
  const empty = await mkdtemp(join(work, 'cwd-'));
  const r = await run(join(prefix, 'bin', 'pawl-demo'), [], empty, 5 * 60_000);
  assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
  assert.match(r.stdout, /automation flux-system\/fleet: pushed [0-9a-f]{12} to main/);
  assert.match(r.stdout, /\+\s+newTag: 6\.2\.0 # \{"\$imagepolicy": "flux-system:podinfo:tag"\}/);
  assert.match(r.stdout, /\(downgrade blocked\)/);
  assert.match(r.stdout, /pawl rollback flux-system\/worker --to main-0a0b0c-1720000000/);
  assert.deepEqual(await readdir(empty), [], 'the demo leaves the directory it runs in as it was');
});
