/**
 * One bad object stops nothing else: the loader returns the valid configuration, every
 * problem, and the objects it left out with why (issue 10, item 1).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config/load.js';
import { AUTOMATION, GIT, POLICY, REPO, configDir, lineOf } from './fixtures.js';

/** The same four objects in namespace `ns`. */
const chain = (ns: string) =>
  [REPO, POLICY, GIT, AUTOMATION]
    .map((d) => d.replaceAll('namespace: apps', `namespace: ${ns}`))
    .join('---\n');

test('an invalid repository skips its policy and the automation that applies it; other namespaces run', async (t) => {
  const bad = chain('broken').replace('interval: 5m', 'interval: soon');
  const { dir, cleanup } = await configDir({ 'good.yaml': chain('good'), 'bad.yaml': bad });
  t.after(cleanup);
  const { config, problems, skipped } = await loadConfig([dir]);
  assert.deepEqual(
    problems.filter((p) => p.severity === 'error').map((p) => [p.location.line, p.object]),
    [[lineOf(bad, 'interval: soon'), 'ImageRepository broken/app']],
  );
  assert.deepEqual(
    skipped.map((s) => [s.kind, `${s.namespace}/${s.name}`, s.reason, s.dependsOn, s.location.line]),
    [
      ['ImageRepository', 'broken/app', 'invalid', null, 1],
      [
        'ImagePolicy',
        'broken/app',
        'dependency',
        'ImageRepository broken/app',
        lineOf(bad, 'kind: ImagePolicy') - 1,
      ],
      [
        'ImageUpdateAutomation',
        'broken/fleet',
        'dependency',
        'ImagePolicy broken/app',
        lineOf(bad, 'kind: ImageUpdateAutomation') - 1,
      ],
    ],
  );
  assert.match(
    skipped[2]!.message,
    /needs ImagePolicy broken\/app, which is skipped \(it needs ImageRepository broken\/app\)/,
  );
  assert.deepEqual([...config.imageRepositories.keys()], ['good/app']);
  assert.deepEqual([...config.imagePolicies.keys()], ['good/app']);
  assert.deepEqual([...config.automations.keys()], ['good/fleet']);
  // The GitRepository needs nothing that is skipped: it stays.
  assert.deepEqual([...config.gitRepositories.keys()].sort(), ['broken/fleet', 'good/fleet']);
});

test('an automation whose template cannot render is skipped alone; its policies still run', async (t) => {
  const bad = chain('broken').replace(
    '    push:',
    "      messageTemplate: '{{ range .Updated.Images }}{{ . }}{{ end }}'\n    push:",
  );
  const { dir, cleanup } = await configDir({ 'good.yaml': chain('good'), 'bad.yaml': bad });
  t.after(cleanup);
  const { config, skipped } = await loadConfig([dir]);
  assert.deepEqual(
    skipped.map((s) => [s.kind, `${s.namespace}/${s.name}`, s.reason]),
    [['ImageUpdateAutomation', 'broken/fleet', 'invalid']],
  );
  assert.match(skipped[0]!.message, new RegExp(`bad\\.yaml:${lineOf(bad, 'messageTemplate')}: .*\\.Updated`));
  assert.deepEqual([...config.automations.keys()], ['good/fleet']);
  assert.deepEqual([...config.imagePolicies.keys()].sort(), ['broken/app', 'good/app']);
});

test('a missing GitRepository, an invalid policy outside the selector, and a policy selected by raw labels', async (t) => {
  const labelled = (name: string, labels: string, range = '">=1.0.0"') =>
    POLICY.replace(
      'name: app\n  namespace: apps',
      `name: ${name}\n  namespace: apps\n  labels: ${labels}`,
    ).replace('">=1.0.0"', range);
  const selecting = (name: string, team: string, source = 'fleet') =>
    AUTOMATION.replace('name: fleet\n  namespace', `name: ${name}\n  namespace`)
      .replace('    name: fleet\n', `    name: ${source}\n`)
      .replace('  update:', `  policySelector:\n    matchLabels: {team: ${team}}\n  update:`);
  const { dir, cleanup } = await configDir({
    'a.yaml': [
      REPO,
      GIT,
      labelled('ok', '{team: a}'),
      labelled('broken-b', '{team: b}', 'not a range'),
      selecting('team-a', 'a'),
      selecting('team-b', 'b'),
      selecting('elsewhere', 'a', 'missing'),
    ].join('---\n'),
  });
  t.after(cleanup);
  const { config, skipped } = await loadConfig([dir]);
  assert.deepEqual(
    skipped.map((s) => [s.name, s.reason, s.dependsOn]),
    [
      ['broken-b', 'invalid', null],
      ['elsewhere', 'invalid', null],
      ['team-b', 'dependency', 'ImagePolicy apps/broken-b'],
    ],
  );
  assert.deepEqual([...config.automations.keys()], ['apps/team-a']);
});
