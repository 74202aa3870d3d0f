/**
 * The commands pawl offers for copying run as printed (issue 23, item 12): `explain`'s, with the
 * -c and --state-dir it was given; the daemon's (API and dashboard), with its own, absolute; and,
 * with PAWL_CONFIG and PAWL_STATE_DIR in the environment (the image, `kubectl exec`), bare ones.
 * Each printed line is handed to `sh -c` unchanged, from another directory, with `pawl` on PATH
 * (bin/pawl.js, as the image and `npm link` put it), against the same registry and git remote.
 * The rollback offered is to the newest tag below the line's value, never the value itself.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { pushTags } from '../helpers/push.js';
import { startServe } from '../helpers/serve.js';
import { gitObjects, imageObjects, ROOT, runCli, startWorld, type World } from '../helpers/world.js';
import { DEPLOY } from '../serve/fixtures.js';
import { configFromEnv } from '../../src/cli/context.js';
import type { Explanation } from '../../src/run/index.js';

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

describe('offered commands, run as printed', () => {
  let w: World;
  let bin: string;
  let elsewhere: string;

  /** `line` through a shell, as a person pastes it: `pawl` from PATH, another working directory. */
  const paste = (line: string, env: Record<string, string> = {}): Promise<Ran> =>
    new Promise((resolve) => {
      execFile(
        'sh',
        ['-c', line],
        {
          cwd: elsewhere,
          env: { ...process.env, PATH: `${bin}${delimiter}${process.env.PATH ?? ''}`, ...env },
        },
        (err, stdout, stderr) =>
          resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
      );
    });
  const lineValue = async () =>
    /team\/app:(\S+) #/.exec(await w.git.show(w.repoName, 'main', 'apps/app.yaml'))?.[1];

  before(async () => {
    w = await startWorld({
      files: { 'apps/app.yaml': DEPLOY },
      config: {
        'git.yaml': gitObjects(),
        'app.yaml': imageObjects('app', '{{REGISTRY}}/team/app', 'semver:\n  range: ">=1.0.0"'),
      },
    });
    await pushTags(w.registry.url, 'team/app', ['1.0.0', '1.1.0', '1.2.0']);
    bin = await mkdtemp(join(tmpdir(), 'pawl-bin-'));
    await symlink(join(ROOT, 'bin', 'pawl.js'), join(bin, 'pawl'));
    elsewhere = await mkdtemp(join(tmpdir(), 'pawl-elsewhere-'));
    const run = await w.pawl(['run']);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(await lineValue(), '1.2.0');
  });
  after(async () => {
    await w?.close();
    await rm(bin, { recursive: true, force: true });
    await rm(elsewhere, { recursive: true, force: true });
  });

  test('explain offers a rollback below the line, with its own -c and --state-dir; pasted, it rolls back', async () => {
    const e = await w.pawlJson<Explanation>(['explain', 'flux-system/app']);
    assert.equal(e.json.rollbackTo, '1.1.0', 'the newest tag below 1.2.0, which the line holds');
    const text = await w.pawl(['explain', 'flux-system/app']);
    const offered = /^To roll back on purpose: (.*)$/m.exec(text.stdout)?.[1];
    assert.equal(
      offered,
      `pawl rollback flux-system/app --to 1.1.0 --reason "…" -c ${w.configDir} --state-dir ${w.stateDir}`,
    );
    const r = await paste(offered!);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(await lineValue(), '1.1.0');
  });

  test("the daemon's commands carry its configuration and state; pasted beside it, they act", async () => {
    const serve = await startServe({ configDir: w.configDir, stateDir: w.stateDir });
    try {
      const get = async () =>
        (await serve.adminGet<Explanation>('/api/v1/policies/flux-system/app/explain')).json;
      const e = await get();
      const marker = e.markers[0]!;
      assert.equal(marker.reason, 'pinned');
      assert.equal(marker.value.endsWith(':1.1.0'), true, marker.value);
      // Below the pinned 1.1.0, not 1.1.0 again.
      assert.equal(e.rollbackTo, '1.0.0');
      const globals = `-c ${w.configDir} --state-dir ${w.stateDir}`;
      assert.equal(e.commands.rollback, `pawl rollback flux-system/app --to 1.0.0 --reason "…" ${globals}`);
      assert.equal(e.commands.release, `pawl release flux-system/app ${globals}`);
      assert.match(marker.advice ?? '', new RegExp(`pawl release flux-system/app ${globals}\\.`));

      const back = await paste(e.commands.rollback);
      assert.equal(back.code, 0, back.stderr);
      assert.equal(await lineValue(), '1.0.0');
      const release = await paste(e.commands.release);
      assert.equal(release.code, 0, release.stderr);
      assert.equal(await lineValue(), '1.2.0');
      const explained = await paste(e.commands.explain);
      assert.equal(explained.code, 0, explained.stderr);
      assert.match(explained.stdout, /ImagePolicy flux-system\/app/);
    } finally {
      await serve.stop();
    }
  });

  test('with PAWL_CONFIG and PAWL_STATE_DIR (the image), the offered commands are bare and run in that environment', async () => {
    const env = { PAWL_CONFIG: w.configDir, PAWL_STATE_DIR: w.stateDir };
    const text = await paste('pawl explain flux-system/app', env);
    assert.equal(text.code, 0, text.stderr);
    const offered = /^To roll back on purpose: (.*)$/m.exec(text.stdout)?.[1];
    assert.equal(offered, 'pawl rollback flux-system/app --to 1.1.0 --reason "…"');
    const r = await paste(offered!, env);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(await lineValue(), '1.1.0');
  });
});

describe('PAWL_CONFIG', () => {
  test('the default for -c: a flag wins over it; several paths are joined as in PATH', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pawl-env-config-'));
    try {
      const a = join(dir, 'a.yaml');
      const b = join(dir, 'b.yaml');
      await writeFile(a, imageObjects('a', 'registry.example/a', 'semver:\n  range: ">=1.0.0"'));
      await writeFile(b, imageObjects('b', 'registry.example/b', 'semver:\n  range: ">=1.0.0"'));
      const both = await runCli(['validate', '--json'], { env: { PAWL_CONFIG: [a, b].join(delimiter) } });
      assert.equal(both.code, 0, both.stderr);
      const objects = (JSON.parse(both.stdout) as { objects: Record<string, number> }).objects;
      assert.equal(objects.ImageRepository, 2, both.stdout);

      const flag = await runCli(['validate', '--json', '-c', a], { env: { PAWL_CONFIG: b } });
      assert.equal(flag.code, 0, flag.stderr);
      assert.equal(
        (JSON.parse(flag.stdout) as { objects: Record<string, number> }).objects.ImageRepository,
        1,
      );

      const none = await runCli(['validate'], { env: { PAWL_CONFIG: '' } });
      assert.equal(none.code, 2);
      assert.match(none.stderr, /pass -c PATH .* or set PAWL_CONFIG/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('empty parts are ignored', () => {
    assert.deepEqual(configFromEnv(undefined), []);
    assert.deepEqual(configFromEnv(`a${delimiter}${delimiter}b${delimiter}`), ['a', 'b']);
  });
});
