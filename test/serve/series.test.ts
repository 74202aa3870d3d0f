/**
 * The per-object metric families (src/serve/series.ts) render what prom-client rendered for the
 * same operations, byte for byte, and the daemon's scrape holds every family once.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { Counter, Gauge, Registry } from 'prom-client';
import { ObjectFamily, PIECE } from '../../src/serve/series.js';
import { ServeMetrics } from '../../src/serve/metrics.js';
import { metricValue } from '../helpers/serve.js';

const HARD = ['flux-system/app-0', 'a"quoted"', 'back\\slash', 'new\nline', 'ünïcödé', ''];

test('a counter family renders exactly what prom-client renders for the same increments and removals', async () => {
  const registry = new Registry();
  const theirs = new Counter({
    name: 'pawl_scans_total',
    help: 'Scans by outcome\\with a backslash\nand a newline.',
    labelNames: ['repository', 'outcome'],
    registers: [registry],
  });
  const ours = new ObjectFamily(
    'pawl_scans_total',
    'Scans by outcome\\with a backslash\nand a newline.',
    'counter',
    ['repository', 'outcome'] as const,
  );
  const ops: [string, string, number][] = [];
  for (const [i, repository] of HARD.entries())
    for (const outcome of ['ok', 'failed']) ops.push([repository, outcome, i + 1]);
  ops.push([HARD[0]!, 'ok', 2.5], [HARD[1]!, 'failed', 7]);
  for (const [repository, outcome, by] of ops) {
    theirs.inc({ repository, outcome }, by);
    ours.inc({ repository, outcome }, by);
  }
  theirs.remove({ repository: HARD[2]!, outcome: 'ok' });
  ours.remove({ repository: HARD[2]!, outcome: 'ok' });
  assert.equal(`${ours.render()}\n`, await registry.metrics());
});

test('a gauge family renders exactly what prom-client renders, values set, reset and odd', async () => {
  const registry = new Registry();
  const theirs = new Gauge({
    name: 'pawl_repository_tags',
    help: 'Tags.',
    labelNames: ['repository'],
    registers: [registry],
  });
  const ours = new ObjectFamily('pawl_repository_tags', 'Tags.', 'gauge', ['repository'] as const);
  const values = [10, 0, -3, 1.25, 1e21, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY];
  for (const [i, repository] of [...HARD, 'x', 'y'].entries()) {
    theirs.set({ repository }, values[i % values.length]!);
    ours.set({ repository }, values[i % values.length]!);
  }
  theirs.set({ repository: HARD[0]! }, 42);
  ours.set({ repository: HARD[0]! }, 42);
  assert.equal(`${ours.render()}\n`, await registry.metrics());
});

test('a family with no series still says what it is', async () => {
  const registry = new Registry();
  new Counter({ name: 'pawl_x_total', help: 'X.', labelNames: ['policy'], registers: [registry] });
  const ours = new ObjectFamily('pawl_x_total', 'X.', 'counter', ['policy'] as const);
  assert.equal(`${ours.render()}\n`, await registry.metrics());
});

test("a family of 20,000 series renders in pieces, none of them a large string, that join to prom-client's text", async () => {
  const registry = new Registry();
  const theirs = new Counter({
    name: 'pawl_scans_total',
    help: 'Scans.',
    labelNames: ['repository', 'outcome'],
    registers: [registry],
  });
  const ours = new ObjectFamily('pawl_scans_total', 'Scans.', 'counter', ['repository', 'outcome'] as const);
  for (let i = 0; i < 20_000; i++) {
    const labels = {
      repository: `flux-system/app-${i}${i % 97 === 0 ? '"quoted"' : ''}`,
      outcome: i % 3 ? 'ok' : 'failed',
    };
    theirs.inc(labels, i % 5);
    ours.inc(labels, i % 5);
  }
  const out: string[] = [];
  ours.renderTo(out);
  assert.equal(`${out.join('')}\n`, await registry.metrics());
  assert.ok(out.length > 50, `${out.length} pieces`);
  // A piece ends at the first series past PIECE characters: well below V8's 128 KiB large objects.
  for (const piece of out) assert.ok(piece.length < PIECE + 200, `a piece of ${piece.length} characters`);
});

test("the daemon's scrape in pieces is its text", async () => {
  const m = new ServeMetrics({ defaultMetrics: false });
  for (let i = 0; i < 5_000; i++)
    m.observeScan({
      name: `flux-system/app-${i}`,
      scanned: true,
      tags: i,
      anomalies: [],
      error: null,
    } as never);
  const pieces: string[] = [];
  for await (const p of m.scrape()) pieces.push(p);
  assert.equal(pieces.join(''), await m.text());
  assert.ok(Math.max(...pieces.map((p) => p.length)) < PIECE + 200);
  assert.equal(
    metricValue(pieces.join(''), 'pawl_repository_tags', { repository: 'flux-system/app-4321' }),
    4321,
  );
});

test("the daemon's scrape holds each metric once, per-object families and prom-client's alike", async () => {
  const m = new ServeMetrics();
  m.observeScan({ name: 'flux-system/app', scanned: true, tags: 12, anomalies: [], error: null } as never);
  m.observeScan({ name: 'flux-system/app', scanned: true, tags: 13, anomalies: [], error: null } as never);
  m.passFailures.set({ job: 'repositories/flux-system/app' }, 0);
  m.reloads.inc({ outcome: 'applied' });
  const text = await m.text();
  assert.ok(text.endsWith('\n') && !text.endsWith('\n\n'));
  const types = [...text.matchAll(/^# TYPE (\S+) /gm)].map((x) => x[1]!);
  assert.equal(new Set(types).size, types.length, 'a metric named twice');
  for (const name of [
    'pawl_scans_total',
    'pawl_repository_tags',
    'pawl_selections_total',
    'pawl_automation_runs_total',
    'pawl_job_failures',
    'pawl_config_reloads_total',
    'pawl_process_cpu_seconds_total',
  ])
    assert.ok(types.includes(name), name);
  assert.equal(metricValue(text, 'pawl_scans_total', { repository: 'flux-system/app', outcome: 'ok' }), 2);
  assert.equal(metricValue(text, 'pawl_repository_tags', { repository: 'flux-system/app' }), 13);
  assert.equal(metricValue(text, 'pawl_config_reloads_total', { outcome: 'applied' }), 1);
  // Families are separated by one blank line, as prom-client separates its own.
  assert.doesNotMatch(text, /\n\n\n/);
  assert.match(text, /\n\n# HELP pawl_scans_total /);
  m.forget('repository', 'flux-system/app');
  assert.doesNotMatch(await m.text(), /^pawl_repository_tags\{/m);
});

test('a report is counted: selections by policy, decisions by reason, runs and pins by automation', async () => {
  const m = new ServeMetrics();
  const kept = (reason: string) => ({ reason }) as never;
  const report = {
    repositories: [],
    policies: [
      { name: 'apps/web', candidate: '1.2.0', highWater: '1.2.0', error: null },
      { name: 'apps/api', candidate: null, highWater: null, error: 'no tag' },
    ],
    automations: [
      {
        name: 'apps/fleet',
        result: 'pushed',
        changes: [{ reason: 'upgrade' }],
        kept: [kept('up-to-date'), kept('up-to-date'), kept('pinned'), kept('downgrade-blocked')],
      },
      { name: 'apps/other', result: 'no-change', changes: [], kept: [kept('pinned'), kept('up-to-date')] },
    ],
  } as never;
  m.observeReport(report);
  m.observeReport(report);
  const text = await m.text();
  const value = (name: string, labels: Record<string, string>) => metricValue(text, name, labels);
  assert.equal(value('pawl_selections_total', { policy: 'apps/web', outcome: 'candidate' }), 2);
  assert.equal(value('pawl_selections_total', { policy: 'apps/api', outcome: 'none' }), 2);
  assert.equal(value('pawl_guard_decisions_total', { reason: 'up-to-date' }), 6);
  assert.equal(value('pawl_guard_decisions_total', { reason: 'pinned' }), 4);
  assert.equal(value('pawl_guard_decisions_total', { reason: 'upgrade' }), 2);
  assert.equal(value('pawl_guard_decisions_total', { reason: 'downgrade-blocked' }), 2);
  assert.equal(value('pawl_automation_runs_total', { automation: 'apps/fleet', result: 'pushed' }), 2);
  assert.equal(value('pawl_pinned_markers', { automation: 'apps/fleet' }), 1);
  assert.equal(value('pawl_pinned_markers', { automation: 'apps/other' }), 1);
});

test('a scrape makes each piece when it is asked for, and a series removed meanwhile is written once and then gone', () => {
  const f = new ObjectFamily('pawl_repository_tags', 'Tags.', 'gauge', ['repository'] as const);
  const name = (i: number) => ({ repository: `flux-system/app-${i}` });
  for (let i = 0; i < 5_000; i++) f.set(name(i), i);
  const scrape = f.pieces();
  const first = scrape.next().value!;
  assert.ok(first.includes('app-0"} 0') && !first.includes('app-4999"'), 'the first piece only');
  // Made after the first piece was taken: the last series' new value is the one written.
  f.set(name(4999), 1);
  // Removed and added again mid-scrape: a Map walked meanwhile would meet it again at its end.
  f.remove(name(0));
  f.set(name(0), 7);
  // Removed mid-scrape: still written by this scrape, gone from the next.
  f.remove(name(1));
  const text = [first, ...scrape].join('');
  assert.match(text, /app-4999"} 1$/m);
  assert.equal(text.match(/app-0"}/g)?.length, 1, 'app-0 once');
  assert.match(text, /app-1"} 1$/m);
  const next = f.render();
  assert.match(next, /app-0"} 7$/m);
  assert.doesNotMatch(next, /app-1"}/);
  f.remove(name(2));
  assert.doesNotMatch(f.render(), /app-2"}/, 'removed at once when no scrape reads');
  // A scrape left half-read (its client gone) lets go of what it held back.
  const left = f.pieces();
  left.next();
  f.remove(name(3));
  left.return();
  assert.doesNotMatch(f.render(), /app-3"}/);
});
