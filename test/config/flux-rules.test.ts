/**
 * Flux's own rules, enforced as Flux's CRDs (image-reflector-controller and
 * image-automation-controller config/crd/bases, source-controller's GitRepository) and
 * controllers (fluxcd/pkg runtime/acl) enforce them; each error names the rule.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config/load.js';
import { AUTOMATION, GIT, POLICY, REPO, configDir } from './fixtures.js';

async function errorsOf(files: Record<string, string>): Promise<string[]> {
  const { dir, cleanup } = await configDir(files);
  try {
    const { problems } = await loadConfig([dir]);
    return problems
      .filter((p) => p.severity === 'error')
      .map((p) => `${p.object ?? ''}: ${p.message.replaceAll(dir, 'DIR')}`);
  } finally {
    await cleanup();
  }
}

/** The fixture repository, moved to namespace `images`, with `accessFrom` (YAML under spec). */
function sharedRepo(accessFrom?: string): string {
  return (
    REPO.replace('namespace: apps', 'namespace: images') +
    (accessFrom === undefined ? '' : `  accessFrom:\n${accessFrom.replace(/^/gm, '    ')}\n`)
  );
}
const crossPolicy = POLICY.replace('    name: app\n', '    name: app\n    namespace: images\n');
const namespace = (name: string, labels: string) =>
  `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${name}\n  labels: ${labels}\n`;

describe('accessFrom: ImagePolicy → ImageRepository in another namespace', () => {
  test('no accessFrom: refused, naming the rule', async () => {
    const errors = await errorsOf({ 'a.yaml': [sharedRepo(), crossPolicy].join('---\n') });
    assert.equal(errors.length, 1);
    assert.match(
      errors[0]!,
      /^ImagePolicy apps\/app: ImageRepository images\/app is in another namespace and has no spec\.accessFrom, so Flux's cross-namespace rule refuses the reference/,
    );
  });

  test('the same namespace needs no accessFrom', async () => {
    assert.deepEqual(await errorsOf({ 'a.yaml': [REPO, POLICY].join('---\n') }), []);
  });

  test("matchLabels against the labels of the policy's Namespace object", async () => {
    const repo = sharedRepo('namespaceSelectors:\n  - matchLabels: {team: apps}');
    assert.deepEqual(
      await errorsOf({
        'a.yaml': [repo, crossPolicy, namespace('apps', '{team: apps, tier: web}')].join('---\n'),
      }),
      [],
    );
    const other = await errorsOf({
      'a.yaml': [repo, crossPolicy, namespace('apps', '{team: billing}')].join('---\n'),
    });
    assert.equal(other.length, 1);
    assert.match(
      other[0]!,
      /ImageRepository images\/app does not allow access from namespace apps \(Flux's cross-namespace rule\): no accessFrom\.namespaceSelectors entry matches its labels \{kubernetes\.io\/metadata\.name: apps, team: billing\} \(Namespace apps at DIR\/a\.yaml:\d+\)/,
    );
  });

  test('without a Namespace object only kubernetes.io/metadata.name is known, and the message says so', async () => {
    const byTeam = sharedRepo('namespaceSelectors:\n  - matchLabels: {team: apps}');
    const errors = await errorsOf({ 'a.yaml': [byTeam, crossPolicy].join('---\n') });
    assert.equal(errors.length, 1);
    assert.match(
      errors[0]!,
      /no Namespace apps object in the configuration, so only the label Kubernetes sets itself/,
    );

    const byName = sharedRepo('namespaceSelectors:\n  - matchLabels: {kubernetes.io/metadata.name: apps}');
    assert.deepEqual(await errorsOf({ 'a.yaml': [byName, crossPolicy].join('---\n') }), []);
  });

  test('any one of several selectors is enough; every label of one selector must match', async () => {
    const ns = namespace('apps', '{team: apps, env: prod}');
    const repo = (sel: string) => sharedRepo(`namespaceSelectors:\n${sel}`);
    assert.deepEqual(
      await errorsOf({
        'a.yaml': [repo('  - matchLabels: {a: b}\n  - matchLabels: {env: prod}'), crossPolicy, ns].join(
          '---\n',
        ),
      }),
      [],
    );
    const partial = await errorsOf({
      'a.yaml': [repo('  - matchLabels: {team: apps, env: dev}'), crossPolicy, ns].join('---\n'),
    });
    assert.equal(partial.length, 1);
  });

  test('an empty selector matches every namespace; an empty list matches none', async () => {
    for (const everyone of ['  - matchLabels: {}', '  - {}']) {
      assert.deepEqual(
        await errorsOf({
          'a.yaml': [sharedRepo(`namespaceSelectors:\n${everyone}`), crossPolicy].join('---\n'),
        }),
        [],
        everyone,
      );
    }
    const none = await errorsOf({
      'a.yaml': [sharedRepo('namespaceSelectors: []'), crossPolicy].join('---\n'),
    });
    assert.equal(none.length, 1);
    assert.match(none[0]!, /does not allow access from namespace apps/);
  });

  test('accessFrom without namespaceSelectors is invalid, as in the CRD', async () => {
    const errors = await errorsOf({ 'a.yaml': sharedRepo('{}') });
    assert.deepEqual(errors, ['ImageRepository images/app: spec.accessFrom.namespaceSelectors is required']);
  });

  test('Namespace objects with labels that are not strings are reported', async () => {
    const errors = await errorsOf({ 'ns.yaml': namespace('apps', '{team: [a]}') });
    assert.deepEqual(errors, ['Namespace apps: metadata.labels.team: expected a string, got a list']);
  });
});

test('a file with a Namespace that is not valid YAML is only a warning: pawl reads Namespaces for labels only', async () => {
  const { dir, cleanup } = await configDir({
    'ns.yaml': 'apiVersion: v1\nkind: Namespace\nmetadata: [unclosed\n',
  });
  try {
    const { problems } = await loadConfig([dir]);
    assert.deepEqual(
      problems.map((p) => p.severity),
      ['warning'],
    );
  } finally {
    await cleanup();
  }
});

test('secretRef with a cloud provider is a warning: Flux does not use it then', async () => {
  const repo = REPO.replace(
    'ghcr.io/org/app',
    '123456789012.dkr.ecr.eu-west-1.amazonaws.com/org/app',
  ).replace('interval: 5m', 'interval: 5m\n  provider: aws\n  secretRef: {name: regcred}');
  const secret = `apiVersion: v1\nkind: Secret\nmetadata: {name: regcred, namespace: apps}\ndata:\n  .dockerconfigjson: e30=\n`;
  const { dir, cleanup } = await configDir({ 'a.yaml': [repo, secret].join('---\n') });
  try {
    const { problems } = await loadConfig([dir]);
    assert.deepEqual(
      problems.map((p) => `${p.severity}: ${p.message}`),
      [
        'warning: spec.secretRef is not used with provider aws: the credentials come from the cloud, as in Flux',
      ],
    );
  } finally {
    await cleanup();
  }
});

describe('CRD enums, patterns and limits', () => {
  test('order is exactly asc or desc', async () => {
    for (const strategy of ['alphabetical', 'numerical']) {
      const policy = POLICY.replace('semver:\n      range: ">=1.0.0"', `${strategy}:\n      order: ASC`);
      assert.deepEqual(await errorsOf({ 'a.yaml': [REPO, policy].join('---\n') }), [
        `ImagePolicy apps/app: spec.policy.${strategy}.order: "ASC" is not one of asc, desc; did you mean asc?`,
      ]);
    }
  });

  test("repository timeout: Flux's pattern allows ms, s and m, not h", async () => {
    const repo = (t: string) => REPO.replace('interval: 5m', `interval: 5m\n  timeout: ${t}`);
    assert.deepEqual(await errorsOf({ 'a.yaml': repo('1h') }), [
      `ImageRepository apps/app: spec.timeout: "1h" does not match Flux's timeout pattern ^([0-9]+(\\.[0-9]+)?(ms|s|m))+$ (units ms, s, m (no h)); write 60m`,
    ]);
    assert.deepEqual(await errorsOf({ 'a.yaml': repo('1h30m') }), [
      `ImageRepository apps/app: spec.timeout: "1h30m" does not match Flux's timeout pattern ^([0-9]+(\\.[0-9]+)?(ms|s|m))+$ (units ms, s, m (no h)); write 90m`,
    ]);
    for (const ok of ['90s', '2m30s', '1.5m', '500ms'])
      assert.deepEqual(await errorsOf({ 'a.yaml': repo(ok) }), [], ok);
  });

  test("intervals: Flux's pattern allows ms, s, m and h, nothing else", async () => {
    const repo = (i: string) => REPO.replace('interval: 5m', `interval: ${i}`);
    for (const bad of ['500ns', '10us', '-5m', '0', '5 m', '1d']) {
      const errors = await errorsOf({ 'a.yaml': repo(JSON.stringify(bad)) });
      assert.equal(errors.length, 1, bad);
      assert.ok(
        errors[0]!.startsWith(
          `ImageRepository apps/app: spec.interval: "${bad}" does not match Flux's interval pattern ^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$ (units ms, s, m, h)`,
        ),
        errors[0],
      );
    }
    for (const ok of ['1h', '1.5h', '5m0s', '250ms'])
      assert.deepEqual(await errorsOf({ 'a.yaml': repo(ok) }), [], ok);
    assert.deepEqual(await errorsOf({ 'a.yaml': repo('0s') }), [
      'ImageRepository apps/app: spec.interval must be longer than 0, e.g. 5m',
    ]);
  });

  test('the interval pattern holds for every Flux kind with an interval', async () => {
    const errors = await errorsOf({
      'a.yaml': [
        REPO,
        POLICY.replace('  policy:', '  digestReflectionPolicy: Always\n  interval: 500ns\n  policy:'),
        GIT.replace('interval: 1m', 'interval: 500ns\n  timeout: 2h'),
        AUTOMATION.replace('interval: 30m', 'interval: 500ns'),
      ].join('---\n'),
    });
    assert.deepEqual(
      errors.map((e) => e.replace(/ does not match.*/, '')),
      [
        'ImagePolicy apps/app: spec.interval: "500ns"',
        'GitRepository apps/fleet: spec.interval: "500ns"',
        'GitRepository apps/fleet: spec.timeout: "2h"',
        'ImageUpdateAutomation apps/fleet: spec.interval: "500ns"',
      ],
    );
  });

  test('exclusionList has at most 25 entries', async () => {
    const repo = (n: number) =>
      REPO + `  exclusionList:\n${Array.from({ length: n }, (_, i) => `    - "^skip-${i}$"\n`).join('')}`;
    assert.deepEqual(await errorsOf({ 'a.yaml': repo(25) }), []);
    assert.deepEqual(await errorsOf({ 'a.yaml': repo(26) }), [
      "ImageRepository apps/app: spec.exclusionList has 26 entries; Flux's CRD allows at most 25 (maxItems), combine patterns with |",
    ]);
  });
});
