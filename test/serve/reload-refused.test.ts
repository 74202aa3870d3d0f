/**
 * A reload that would take away what the daemon runs (issue 22): the configuration file
 * truncated, emptied or filled with garbage is refused like an invalid one — the running
 * configuration stays, and the refusal shows in the log, the metrics, the API and the
 * dashboard. A file deleted on purpose takes its objects with it, as long as something is left.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { shrinkProblems } from '../../src/serve/source/index.js';
import { metricValue, startServe, type ServeProcess } from '../helpers/serve.js';
import { gitObjects, type World } from '../helpers/world.js';
import { oneAppWorld } from './fixtures.js';

interface Status {
  config: {
    objects: Record<string, number>;
    lastReload: { applied: boolean; problems: { file: string; severity: string; message: string }[] };
  };
}

interface Dashboard {
  attention: { state: string; title: string; why: string }[];
}

describe('a reload that would remove what runs', () => {
  let w: World;
  let serve: ServeProcess | undefined;
  after(async () => {
    await serve?.stop('SIGKILL');
    await w?.close();
  });

  test('truncated, emptied and garbage files are refused; a file deleted on purpose is applied', async () => {
    w = await oneAppWorld({ tags: ['1.0.0'] });
    serve = await startServe({ configDir: w.configDir, stateDir: w.stateDir, args: ['--no-watch'] });
    await serve.waitForLog((r) => r.msg === 'pass', 'the first pass');
    const running = (await serve.adminGet<Status>('/api/v1/status')).json.config.objects;
    assert.equal(running.ImageRepository, 1);

    let refusals = 0;
    const reload = async (what: string): Promise<void> => {
      const seen = serve!.records().length;
      serve!.child.kill('SIGHUP');
      const r = await serve!.waitForLog(
        (x) =>
          serve!.records().indexOf(x) >= seen &&
          (x.msg.startsWith('configuration refused') || x.msg === 'configuration applied'),
        `the reload after ${what}`,
      );
      assert.match(r.msg, /^configuration refused/, `${what}: ${serve!.output().slice(-3000)}`);
      refusals++;
      const status = (await serve!.adminGet<Status>('/api/v1/status')).json.config;
      assert.equal(status.lastReload.applied, false, what);
      assert.deepEqual(status.objects, running, `${what}: the running configuration stays`);
      assert.equal(
        metricValue(await serve!.metrics(), 'pawl_config_reloads_total', { outcome: 'refused' }),
        refusals,
      );
      const page = (await serve!.adminGet<Dashboard>('/api/v1/dashboard')).json;
      assert.equal(page.attention[0]?.state, 'error', what);
      assert.match(page.attention[0]?.title ?? '', /^Configuration change refused: /, what);
    };

    // Cut off half-way through the first object: what is left names no kind.
    await writeFile(join(w.configDir, 'app.yaml'), 'apiVersion: image.toolkit.fluxcd.io/v1\nki');
    await reload('a truncated file');
    let problems = (await serve.adminGet<Status>('/api/v1/status')).json.config.lastReload.problems;
    assert.ok(
      problems.some((p) => p.file.endsWith('app.yaml') && /now yields none pawl can read/.test(p.message)),
      JSON.stringify(problems),
    );

    await writeFile(join(w.configDir, 'app.yaml'), '\u0000\u0001garbage{{{\n');
    await reload('a garbage file');

    await writeFile(join(w.configDir, 'app.yaml'), '');
    await writeFile(join(w.configDir, 'git.yaml'), '');
    await reload('every file emptied');
    problems = (await serve.adminGet<Status>('/api/v1/status')).json.config.lastReload.problems;
    assert.ok(
      problems.some((p) => /holds no object pawl knows, where the running one has \d+/.test(p.message)),
      JSON.stringify(problems),
    );

    // Deleting a file is how a person removes its objects: applied, the rest runs on.
    await w.writeConfig('git.yaml', gitObjects().replace('interval: 5m', 'interval: 1h'));
    await rm(join(w.configDir, 'app.yaml'));
    const seen = serve.records().length;
    serve.child.kill('SIGHUP');
    const applied = await serve.waitForLog(
      (x) =>
        serve!.records().indexOf(x) >= seen &&
        (x.msg.startsWith('configuration refused') || x.msg === 'configuration applied'),
      'the reload after a deleted file',
    );
    assert.equal(applied.msg, 'configuration applied', serve.output().slice(-3000));
    const after = (await serve.adminGet<Status>('/api/v1/status')).json.config;
    assert.equal(after.objects.ImageRepository, 0);
    assert.equal(after.objects.GitRepository, 1);
  });
});

describe('shrinkProblems', () => {
  const config = (files: string[]) =>
    ({
      imageRepositories: new Map(files.map((f, i) => [`ns/r${i}`, { source: { file: f } }])),
      imagePolicies: new Map(),
      automations: new Map(),
      gitRepositories: new Map(),
      receivers: new Map(),
      secrets: new Map(),
      providers: new Map(),
      alerts: new Map(),
      namespaces: new Map(),
    }) as unknown as Parameters<typeof shrinkProblems>[0];

  test('nothing left of something is refused; nothing before and after is not', () => {
    assert.equal(shrinkProblems(config(['a.yaml']), config([])).length, 1);
    assert.deepEqual(shrinkProblems(config([]), config([])), []);
  });

  test('a file still there that yields nothing is refused; one deleted is not', () => {
    const before = config(['a.yaml', 'b.yaml', 'b.yaml']);
    const after = config(['a.yaml']);
    const there = shrinkProblems(before, after, () => true);
    assert.deepEqual(
      there.map((p) => p.location.file),
      ['b.yaml'],
    );
    assert.match(there[0]!.message, /held 2 objects/);
    assert.deepEqual(
      shrinkProblems(before, after, () => false),
      [],
    );
    assert.deepEqual(shrinkProblems(before, after), [], 'a source without files has only the first rule');
  });
});
