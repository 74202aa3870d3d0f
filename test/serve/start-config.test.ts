/**
 * `pawl serve` started on a configuration with one invalid object: the valid automation runs and
 * pushes, the invalid object and what needs it are named with `pawl validate`'s file:line errors
 * in the log and the API; with `--strict` nothing starts (exit 2). The git credentials outside the
 * `-c` files, under `--secrets-dir` as Kubernetes mounts them: without the flag every automation
 * is skipped and /readyz says so (503); with it the daemon reads the Secret and pushes.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pushTags } from '../helpers/push.js';
import { startServe, type ServeProcess } from '../helpers/serve.js';
import {
  GIT_PASSWORD,
  GIT_USER,
  gitObjects,
  imageObjects,
  startWorld,
  type World,
} from '../helpers/world.js';
import { DEPLOY } from './fixtures.js';

describe('starting on a configuration with an invalid object', () => {
  let w: World;
  let serve: ServeProcess | undefined;
  after(async () => {
    await serve?.stop('SIGKILL');
    await w?.close();
  });

  test('serves the valid objects and names the skipped ones; --strict refuses to start', async () => {
    w = await startWorld({
      files: { 'apps/app.yaml': DEPLOY },
      config: {
        'git.yaml': gitObjects().replace('interval: 5m', 'interval: 1h'),
        'app.yaml': imageObjects('app', '{{REGISTRY}}/team/app', 'semver:\n  range: ">=1.0.0"', {
          interval: '1h',
        }),
        'broken.yaml': imageObjects('broken', '{{REGISTRY}}/team/broken', 'semver:\n  range: ">=1.0.0"', {
          interval: '1h',
        })
          .replace('interval: 1h', 'interval: banana')
          .replaceAll('namespace: flux-system', 'namespace: other'),
      },
    });
    await pushTags(w.registry.url, 'team/app', ['1.0.0', '1.1.0']);
    const before = (await w.git.log(w.repoName, 'main')).length;

    const validate = await w.pawl(['validate']);
    assert.equal(validate.code, 2);
    const expected = validate.stdout.split('\n').filter((l) => l.includes('broken.yaml:'));
    assert.ok(expected.length > 0, validate.stdout);

    const strict = await w.pawl([
      'serve',
      '--strict',
      '--listen',
      '127.0.0.1:0',
      '--admin-listen',
      '127.0.0.1:0',
    ]);
    assert.equal(strict.code, 2, strict.stderr);
    for (const line of expected) assert.ok(strict.stderr.includes(line), `--strict names: ${line}`);

    serve = await startServe({ configDir: w.configDir, stateDir: w.stateDir });
    await serve.waitForLog((r) => r.msg === 'pass' && r.result === 'pushed', 'the valid automation pushes');
    const log = await w.git.log(w.repoName, 'main');
    assert.equal(log.length, before + 1);
    assert.match(await w.git.show(w.repoName, log[0]!.sha, 'apps/app.yaml'), /team\/app:1\.1\.0 #/);

    const logged = serve
      .records()
      .filter((r) => r.level === 50)
      .map((r) => r.msg);
    for (const line of expected) assert.ok(logged.includes(line), `logged: ${line}`);
    assert.ok(logged.some((m) => m.startsWith('invalid objects skipped')));

    const status = await serve.adminGet<{
      config: {
        lastReload: {
          applied: boolean;
          problems: { severity: string; text: string; object: string | null }[];
        };
        objects: Record<string, number>;
      };
    }>('/api/v1/status');
    assert.equal(status.json.config.lastReload.applied, true);
    assert.equal(status.json.config.objects.ImageRepository, 1, 'only the valid repository runs');
    const errors = status.json.config.lastReload.problems.filter((p) => p.severity === 'error');
    for (const line of expected)
      assert.ok(
        errors.some((p) => p.text === line),
        `API names: ${line}`,
      );
    assert.ok(
      errors.some((p) => p.object === 'ImagePolicy other/broken'),
      'the policy that needs the invalid repository is named as skipped',
    );
    assert.equal((await serve.adminGet('/readyz')).status, 200);
    assert.match(await serve.metrics(), /^pawl_config_errors [1-9]/m);
  });
});

describe('the git credentials under --secrets-dir', () => {
  let w: World;
  let serve: ServeProcess | undefined;
  after(async () => {
    await serve?.stop('SIGKILL');
    await w?.close();
  });

  test('without it every automation is skipped and /readyz is 503; with it the Secret is read and the pass pushes', async () => {
    // The Secret is not in the -c files: the Deployment mounts it.
    const git = gitObjects()
      .replace('interval: 5m', 'interval: 1h')
      .replace(/---\napiVersion: v1\nkind: Secret\n[\s\S]*?(?=---\n)/, '');
    assert.doesNotMatch(git, /kind: Secret/);
    w = await startWorld({
      files: { 'apps/app.yaml': DEPLOY },
      config: {
        'git.yaml': git,
        'app.yaml': imageObjects('app', '{{REGISTRY}}/team/app', 'semver:\n  range: ">=1.0.0"', {
          interval: '1h',
        }),
      },
    });
    await pushTags(w.registry.url, 'team/app', ['1.0.0', '1.1.0']);
    const before = (await w.git.log(w.repoName, 'main')).length;
    const secrets = join(w.stateDir, '..', 'secrets');
    await mkdir(join(secrets, 'flux-system', 'git-credentials'), { recursive: true });
    await writeFile(join(secrets, 'flux-system', 'git-credentials', 'username'), GIT_USER);
    await writeFile(join(secrets, 'flux-system', 'git-credentials', 'password'), GIT_PASSWORD);

    serve = await startServe({ configDir: w.configDir, stateDir: w.stateDir });
    await serve.waitForLog((r) => r.msg === 'listening', 'listening');
    const unready = await serve.adminGet<{ status: string; reason: string }>('/readyz');
    assert.equal(unready.status, 503);
    assert.equal(unready.json.status, 'configuration');
    assert.match(
      unready.json.reason,
      /ImageUpdateAutomation flux-system\/fleet \(needs GitRepository flux-system\/fleet\)/,
    );
    assert.ok(serve.output().includes('Secret flux-system/git-credentials not found'));
    await serve.stop('SIGTERM');

    serve = await startServe({
      configDir: w.configDir,
      stateDir: w.stateDir,
      args: ['--secrets-dir', secrets],
    });
    await serve.waitForLog((r) => r.msg === 'pass' && r.result === 'pushed', 'the pass pushes');
    assert.equal((await serve.adminGet('/readyz')).status, 200);
    const log = await w.git.log(w.repoName, 'main');
    assert.equal(log.length, before + 1);
    assert.match(await w.git.show(w.repoName, log[0]!.sha, 'apps/app.yaml'), /team\/app:1\.1\.0 #/);

    // A reload reads the Secrets from the same place: the configuration stays applied.
    serve.child.kill('SIGHUP');
    const reloaded = await serve.waitForLog(
      (r) => r.msg === 'configuration applied' || r.msg.startsWith('configuration refused'),
      'the reload',
    );
    assert.equal(reloaded.msg, 'configuration applied', serve.output().slice(-4000));
  });
});
