/**
 * The Dockerfile for users elsewhere, built with `podman build` against a stand-in for
 * node:20-bookworm-slim (scripts/build-image.sh --node-standin: the same Debian root, the official
 * Node 20 binary and headers, npm), then run: --version, validate, SQLite.
 *
 * Not part of `npm test` (run it with `npm run test:dockerfile`): the build downloads the dev dependencies and compiles
 * better-sqlite3 again, minutes that CI's budget keeps for the image test. docs/deploy.md says
 * what the stand-in proves and what it does not.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, writeFile, rm, readFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../helpers/world.js';

const TAG = 'localhost/pawl-dockerfile:test';

function run(cmd: string, args: string[], timeoutMs = 30 * 60_000) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    execFile(cmd, args, { cwd: ROOT, maxBuffer: 64 << 20, timeout: timeoutMs }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr }),
    ),
  );
}

const RUN = [
  'run',
  '--rm',
  '--runtime=runc',
  '--network=none',
  '--ulimit=nofile=4096:4096',
  '--ulimit=nproc=4096:4096',
  '--read-only',
  '--cap-drop=ALL',
];

{
  let work = '';
  before(async () => {
    work = await mkdtemp(join(tmpdir(), 'pawl-dockerfile-test-'));
    const standin = await run('bash', [join(ROOT, 'scripts/build-image.sh'), '--node-standin']);
    assert.equal(standin.code, 0, standin.stderr);
    // npm inside the build must trust what the host's npm trusts (this machine reaches the
    // registry through a TLS-inspecting proxy whose CA is in the host's bundle): mounted for the
    // build's RUN steps only, not part of the image.
    const npmrc = join(work, 'npmrc');
    await writeFile(npmrc, 'cafile=/etc/ssl/host-ca-certificates.crt\n');
    const build = await run('podman', [
      'build',
      '--no-cache',
      '--pull=never',
      '--volume=/etc/ssl/certs/ca-certificates.crt:/etc/ssl/host-ca-certificates.crt:ro',
      `--volume=${npmrc}:/root/.npmrc:ro`,
      '--runtime=runc',
      '--network=host',
      '--ulimit=nofile=4096:4096',
      '--ulimit=nproc=4096:4096',
      // The host's npm cache, so dependencies already downloaded are not fetched again.
      `--volume=${join(homedir(), '.npm')}:/root/.npm`,
      '--tag',
      TAG,
      '--file',
      join(ROOT, 'Dockerfile'),
      ROOT,
    ]);
    assert.equal(build.code, 0, `podman build:\n${build.stdout.slice(-4000)}\n${build.stderr.slice(-4000)}`);
  });
  after(async () => {
    await run('podman', ['rmi', '--force', TAG]);
    if (work) await rm(work, { recursive: true, force: true });
  });

  test('the image built from the Dockerfile runs pawl as user 10001', async () => {
    const { version } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const v = await run('podman', [...RUN, TAG, '--version']);
    assert.equal(v.code, 0, v.stderr);
    assert.equal(v.stdout.trim(), version);
    const id = await run('podman', [...RUN, '--entrypoint=["id","-u"]', TAG]);
    assert.equal(id.stdout.trim(), '10001');
    const npm = await run('podman', [...RUN, '--entrypoint=["sh","-c","command -v npm || echo none"]', TAG]);
    assert.equal(npm.stdout.trim(), 'none', 'npm is not in the runtime image');
  });

  test('validate (0 and 2) and SQLite in the Dockerfile image', async () => {
    const good = `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: { name: podinfo, namespace: flux-system }
spec: { image: 127.0.0.1:5000/demo/podinfo, interval: 1h }
`;
    // A folder the container's user (10001) may enter: mkdtemp's is private to root.
    const config = join(work, 'config');
    await mkdir(config, { mode: 0o755 });
    await writeFile(join(config, 'good.yaml'), good);
    await writeFile(join(config, 'bad.yaml'), good.replace('interval: 1h', 'interval: soon'));
    const ok = await run('podman', [
      ...RUN,
      `--volume=${config}:/config:ro`,
      TAG,
      'validate',
      '-c',
      '/config/good.yaml',
    ]);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    const no = await run('podman', [
      ...RUN,
      `--volume=${config}:/config:ro`,
      TAG,
      'validate',
      '-c',
      '/config/bad.yaml',
    ]);
    assert.equal(no.code, 2, no.stdout + no.stderr);
    assert.match(no.stdout + no.stderr, /\/config\/bad\.yaml:4: ImageRepository flux-system\/podinfo/);
    const sqlite = await run('podman', [
      ...RUN,
      '--entrypoint=["node","-e","const D=require(\'/opt/pawl/node_modules/better-sqlite3\');console.log(new D(\':memory:\').prepare(\'select 41+1 v\').get().v)"]',
      TAG,
    ]);
    assert.equal(sqlite.stdout.trim(), '42', sqlite.stderr);
  });
}
