/**
 * The daemon's configuration rules without a daemon (source/configuration.ts), over real files:
 * the start serves the valid objects unless strict; a reload is all or nothing — one invalid
 * object refuses the whole read, as does a file still there that yields nothing or a read that
 * keeps nothing — while a file deleted on purpose takes its objects with it; no reload once
 * stopping; and one reload at a time.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ServeMetrics } from '../../src/serve/metrics.js';
import type { Clock } from '../../src/serve/scheduler.js';
import {
  Configuration,
  FileSource,
  loadFirst,
  type Applied,
  type LoadedConfig,
} from '../../src/serve/source/index.js';
import { ConfigError, silentLogger } from '../../src/util/index.js';
import { metricValue } from '../helpers/serve.js';
import { AUTOMATION, GIT, POLICY } from '../config/fixtures.js';

const repo = (name: string, interval = '5m') => `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: ${name}, namespace: apps}
spec:
  image: ghcr.io/org/${name}
  interval: ${interval}
`;

const clock: Clock = { now: () => 0, setTimeout: () => 0, clearTimeout: () => undefined };
let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pawl-configuration-'));
});
after(() => rm(dir, { recursive: true, force: true }));

async function files(sub: string, content: Record<string, string>): Promise<string> {
  const d = join(dir, sub);
  await rm(d, { recursive: true, force: true });
  await mkdir(d, { recursive: true });
  for (const [f, text] of Object.entries(content)) await writeFile(join(d, f), text);
  return d;
}

const names = (c: LoadedConfig) => [...c.config.imageRepositories.keys()].sort();

function configuration(d: string, first: LoadedConfig, opts: { stopping?: () => boolean } = {}) {
  const applied: LoadedConfig[] = [];
  const metrics = new ServeMetrics();
  let hold: Promise<void> | null = null;
  const c = new Configuration(new FileSource({ paths: [d], log: silentLogger }), first, {
    log: silentLogger,
    metrics,
    clock,
    stopping: opts.stopping ?? (() => false),
    apply: async (loaded): Promise<Applied> => {
      applied.push(loaded);
      if (hold) await hold;
      return { added: [], removed: [], changed: [] };
    },
  });
  return {
    c,
    applied,
    metrics,
    holdApply(p: Promise<void> | null) {
      hold = p;
    },
  };
}

test('the start serves the valid objects and names the invalid one; strict refuses', async () => {
  const d = await files('start', { 'a.yaml': repo('web'), 'b.yaml': repo('app', 'often') });
  const source = new FileSource({ paths: [d], log: silentLogger });
  const first = await loadFirst(source, { log: silentLogger, metrics: new ServeMetrics() }, false);
  assert.deepEqual(names(first), ['apps/web']);
  assert.equal(first.errors.length, 1);
  assert.match(first.errors[0]!.location.file, /b\.yaml$/);
  await assert.rejects(
    loadFirst(source, { log: silentLogger, metrics: new ServeMetrics() }, true),
    (err: unknown) => err instanceof ConfigError,
  );
});

test('a reload with one invalid object is refused whole; a valid one is applied', async () => {
  const d = await files('reload', { 'a.yaml': repo('web'), 'b.yaml': repo('app') });
  const source = new FileSource({ paths: [d], log: silentLogger });
  const first = await loadFirst(source, { log: silentLogger, metrics: new ServeMetrics() }, true);
  const { c, applied, metrics } = configuration(d, first);

  // A new valid object beside a broken one: nothing of the read is taken, not even the new one
  // (b.yaml still yields app: only the all-or-nothing rule refuses this, not the shrink rule).
  await writeFile(join(d, 'a.yaml'), `${repo('web')}---\n${repo('new')}`);
  await writeFile(join(d, 'b.yaml'), `${repo('app')}---\n${repo('bad', 'often')}`);
  const refused = await c.reload('SIGHUP');
  assert.equal(refused.applied, false);
  assert.ok(
    refused.problems.some((p) => p.severity === 'error' && /b\.yaml$/.test(p.location.file)),
    'the refusal names the file',
  );
  assert.equal(c.current, first, 'the running configuration stays');
  assert.equal(applied.length, 0, 'nothing was put into effect');
  assert.equal(c.lastReload, refused);
  assert.equal(metricValue(await metrics.text(), 'pawl_config_reloads_total', { outcome: 'refused' }), 1);

  await writeFile(join(d, 'b.yaml'), `${repo('app')}---\n${repo('bad', '10m')}`);
  const ok = await c.reload('SIGHUP');
  assert.equal(ok.applied, true);
  assert.deepEqual(names(c.current), ['apps/app', 'apps/bad', 'apps/new', 'apps/web']);
  assert.equal(applied.length, 1);
  assert.equal(applied[0], c.current);
});

test('a file still there that yields nothing is refused; deleted, its objects go; nothing left at all is refused', async () => {
  const d = await files('shrink', { 'a.yaml': repo('web'), 'b.yaml': repo('app') });
  const source = new FileSource({ paths: [d], log: silentLogger });
  const first = await loadFirst(source, { log: silentLogger, metrics: new ServeMetrics() }, true);
  const { c, applied } = configuration(d, first);

  await writeFile(join(d, 'b.yaml'), '');
  const truncated = await c.reload('file change');
  assert.equal(truncated.applied, false, 'an emptied file is refused');
  assert.match(truncated.problems[0]!.message, /held 1 object and now yields none/);
  assert.deepEqual(names(c.current), ['apps/app', 'apps/web']);

  await rm(join(d, 'b.yaml'));
  const deleted = await c.reload('file change');
  assert.equal(deleted.applied, true, 'a deleted file takes its objects with it');
  assert.deepEqual(names(c.current), ['apps/web']);

  await rm(join(d, 'a.yaml'));
  const none = await c.reload('file change');
  assert.equal(none.applied, false, 'the last file deleted: nothing would run');
  assert.match(none.problems[0]!.message, /holds no object pawl knows, where the running one has 1/);
  assert.deepEqual(names(c.current), ['apps/web']);
  assert.equal(applied.length, 1);
});

test('no reload once stopping; reloads run one at a time', async () => {
  const d = await files('serial', { 'a.yaml': repo('web') });
  const source = new FileSource({ paths: [d], log: silentLogger });
  const first = await loadFirst(source, { log: silentLogger, metrics: new ServeMetrics() }, true);
  let stopping = false;
  // A reload asks whether the daemon is stopping before anything else: the calls say which started.
  let started = 0;
  const { c, applied, holdApply } = configuration(d, first, {
    stopping: () => {
      started++;
      return stopping;
    },
  });

  let release!: () => void;
  holdApply(new Promise<void>((r) => (release = r)));
  await writeFile(join(d, 'a.yaml'), `${repo('web')}---\n${repo('one')}`);
  const firstReload = c.reload('one');
  // Wait until the first reload is putting its configuration into effect, then ask for another.
  while (applied.length === 0) await new Promise((r) => setImmediate(r));
  await writeFile(join(d, 'a.yaml'), `${repo('web')}---\n${repo('two')}`);
  const second = c.reload('two');
  await new Promise((r) => setImmediate(r));
  assert.equal(started, 1, 'the second reload has not started: it waits for the first to finish');
  assert.equal(applied.length, 1);
  holdApply(null);
  release();
  assert.equal((await firstReload).applied, true);
  assert.equal((await second).applied, true);
  assert.deepEqual(
    applied.map((a) => names(a)),
    [
      ['apps/one', 'apps/web'],
      ['apps/two', 'apps/web'],
    ],
  );

  stopping = true;
  await writeFile(join(d, 'a.yaml'), repo('three'));
  const late = await c.reload('SIGHUP');
  assert.equal(late.applied, false);
  assert.deepEqual(late.problems, []);
  assert.deepEqual(names(c.current), ['apps/two', 'apps/web'], 'stopping: the files are not even read');
  assert.equal(applied.length, 2);
});

test('repositories used by the same automations share one list of them', async () => {
  const policy = (name: string, labels = '') =>
    POLICY.replace(/name: app\n/g, `name: ${name}\n`).replace(
      'namespace: apps\n',
      `namespace: apps\n${labels}`,
    );
  const automation = (name: string, selector = '') =>
    AUTOMATION.replace('name: fleet\n  namespace: apps\nspec:', `name: ${name}\n  namespace: apps\nspec:`) +
    selector;
  const d = await files('dependents', {
    'a.yaml': [
      GIT,
      repo('web'),
      repo('app'),
      repo('api'),
      policy('web'),
      policy('app'),
      policy('api', '  labels: {team: api}\n'),
      automation('one'),
      automation('two'),
      automation('three', '  policySelector: {matchLabels: {team: api}}\n'),
    ].join('---\n'),
  });
  const source = new FileSource({ paths: [d], log: silentLogger });
  const first = await loadFirst(source, { log: silentLogger, metrics: new ServeMetrics() }, true);
  const of = (r: string) => first.dependents.get(`apps/${r}`);
  assert.deepEqual(of('web'), ['apps/one', 'apps/two']);
  assert.equal(of('app'), of('web'), 'one list for both');
  assert.deepEqual(of('api'), ['apps/one', 'apps/two', 'apps/three']);
});
