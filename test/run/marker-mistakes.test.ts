/**
 * `markerMistakes` (src/run/markers.ts) names each mistaken marker's file and 1-based line, with
 * the text around it as a person wrote it: LF or CRLF lines, the token more than once on a line,
 * the token outside a comment, the first line and the last line without a newline.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { appliedPolicies, definedPolicies, markerMistakes } from '../../src/run/markers.js';
import { loadConfig, type ImageUpdateAutomation } from '../../src/config/index.js';
import type { ScannedFile } from '../../src/write/index.js';

const automation = { metadata: { namespace: 'apps', name: 'fleet' } } as unknown as ImageUpdateAutomation;
const policies = new Set(['apps/app', 'apps/other']);
const applied = new Set(['apps/app']);
const file = (text: string): ScannedFile => ({
  file: 'apps/app.yaml',
  path: '/x/apps/app.yaml',
  text,
  markers: [],
});
const lines = (text: string) =>
  markerMistakes([file(text)], automation, policies, applied).map((m) => [m.line, m.message.slice(0, 40)]);

test('each mistaken marker at its own line, whatever the line endings', () => {
  const lf = [
    'image: a:1 # {"$imagepolicy": "app"}', // 1: no namespace
    'ok: 1',
    'image: b:1 # {"$imagepolicy": "apps:app"}', // 3: fine
    'note: "{"$imagepolicy": "x"}" is not a comment', // 4: the token outside a comment
    '',
    'image: c:1 # {"$imagepolicy": "apps:app:tga"} {"$imagepolicy": "y"}', // 6: bad suffix, once
    'image: d:1 # {"$imagepolicy": "apps:missing"}', // 7: no such policy
  ].join('\n');
  assert.deepEqual(
    lines(lf).map((g) => g[0]),
    [1, 6, 7],
  );
  assert.deepEqual(
    lines(lf.replace(/\n/g, '\r\n')).map((g) => g[0]),
    [1, 6, 7],
  );
  assert.equal(lines(lf)[0]![1], 'marker "app" has no namespace; Flux read');
});

test('a policy no automation applies, on a last line without a newline', () => {
  const got = lines('a: 1\nb: 2\nimage: e:1 # {"$imagepolicy": "apps:other"}');
  assert.equal(got.length, 1);
  assert.equal(got[0]![0], 3);
});

test('which policies are defined and applied is worked out once per configuration, not once per pass', async () => {
  // Two automations in apps (one selecting by label), one elsewhere; a policy no automation applies.
  const policy = (ns: string, name: string, labels = '') =>
    `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: ${name}\n  namespace: ${ns}\n${labels}spec:\n  imageRepositoryRef:\n    name: ${name}\n  policy:\n    semver:\n      range: '>=1.0.0'\n`;
  const repo = (ns: string, name: string) =>
    `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n  name: ${name}\n  namespace: ${ns}\nspec:\n  image: registry.example.com/${name}\n  interval: 1h\n`;
  const automation = (ns: string, name: string, selector = '') =>
    `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n  name: ${name}\n  namespace: ${ns}\nspec:\n  interval: 1h\n  sourceRef:\n    kind: GitRepository\n    name: fleet\n${selector}  git:\n    commit:\n      author:\n        name: pawl\n        email: pawl@example.com\n  update:\n    path: ./\n    strategy: Setters\n`;
  const git = (ns: string) =>
    `apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: fleet\n  namespace: ${ns}\nspec:\n  interval: 1h\n  url: https://git.example.com/fleet.git\n  ref:\n    branch: main\n`;
  const dir = await mkdtemp(join(tmpdir(), 'pawl-applied-'));
  try {
    await writeFile(
      join(dir, 'all.yaml'),
      [
        git('apps'),
        git('other'),
        repo('apps', 'web'),
        repo('apps', 'api'),
        repo('other', 'db'),
        policy('apps', 'web', '  labels:\n    team: web\n'),
        policy('apps', 'api'),
        policy('other', 'db'),
        automation('apps', 'fleet', '  policySelector:\n    matchLabels:\n      team: web\n'),
        automation('other', 'fleet'),
      ].join('---\n'),
    );
    const load = async () => {
      const { config, skipped } = await loadConfig([dir]);
      assert.deepEqual(skipped, []);
      return config;
    };
    const config = await load();
    const applied = appliedPolicies(config);
    assert.deepEqual([...applied].sort(), ['apps/web', 'other/db']);
    assert.deepEqual([...definedPolicies(config)].sort(), ['apps/api', 'apps/web', 'other/db']);
    assert.equal(appliedPolicies(config), applied, 'the same answer, not worked out again');
    assert.equal(definedPolicies(config), definedPolicies(config));
    // A reload is another configuration, and gets its own.
    assert.notEqual(appliedPolicies(await load()), applied);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a file seen again is not read again, but another namespace or set of policies is asked afresh', () => {
  // A daemon's kept scan hands the same file objects to pass after pass.
  const f = file('image: a:1 # {"$imagepolicy": "apps:missing"}\nimage: b:1 # {"$imagepolicy": "nope"}\n');
  const first = markerMistakes([f], automation, policies, applied);
  assert.equal(first.length, 2);
  assert.ok(first.every((m) => Object.isFrozen(m)));
  const again = markerMistakes([f], automation, policies, applied);
  assert.deepEqual(again, first);
  assert.equal(again[0], first[0], 'the same mistakes, not found again');

  const elsewhere = { metadata: { namespace: 'web', name: 'fleet' } } as unknown as ImageUpdateAutomation;
  assert.match(markerMistakes([f], elsewhere, policies, applied)[1]!.message, /"web:nope"/);
  const more = new Set([...policies, 'apps/missing']);
  assert.deepEqual(
    markerMistakes([f], automation, more, new Set([...applied, 'apps/missing'])).map((m) => m.line),
    [2],
  );
});
