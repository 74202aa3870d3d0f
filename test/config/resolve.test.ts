import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { matchesSelector, resolveObject, selectPolicies } from '../../src/config/resolve.js';
import { emptyConfig } from '../../src/config/load.js';
import { UsageError } from '../../src/util/errors.js';
import {
  DEFAULT_GUARD,
  type ImagePolicy,
  type ImageUpdateAutomation,
  type LabelSelector,
} from '../../src/config/types.js';

const usage = (re: RegExp) => (e: unknown) => e instanceof UsageError && re.test(e.message);

describe('resolveObject', () => {
  const map = new Map([
    ['apps/podinfo', 1],
    ['apps/web', 2],
    ['staging/web', 3],
  ]);
  test('namespace/name and a unique bare name', () => {
    assert.equal(resolveObject(map, 'staging/web', 'ImagePolicy'), 3);
    assert.equal(resolveObject(map, 'podinfo', 'ImagePolicy'), 1);
  });
  test('an ambiguous bare name lists the candidates', () => {
    assert.throws(
      () => resolveObject(map, 'web', 'ImagePolicy'),
      usage(/"web" is ambiguous: apps\/web, staging\/web; write NAMESPACE\/NAME/),
    );
  });
  test('an unknown name lists close matches', () => {
    assert.throws(
      () => resolveObject(map, 'podinf', 'ImagePolicy'),
      usage(/no ImagePolicy named "podinf"; did you mean apps\/podinfo\?/),
    );
    assert.throws(() => resolveObject(map, 'prod/web', 'ImagePolicy'), usage(/did you mean .*apps\/web/));
    assert.throws(() => resolveObject(new Map(), 'x', 'ImagePolicy'), usage(/there is no ImagePolicy/));
  });
});

function policy(namespace: string, name: string, labels: Record<string, string> = {}): ImagePolicy {
  return {
    kind: 'ImagePolicy',
    apiVersion: 'image.toolkit.fluxcd.io/v1',
    metadata: { namespace, name, labels, annotations: {} },
    source: { file: 'x.yaml', line: 1 },
    spec: {
      imageRepositoryRef: { namespace, name },
      policy: { strategy: 'semver', range: '*' },
      digestReflectionPolicy: 'Never',
      suspend: false,
      guard: DEFAULT_GUARD,
    },
  };
}

function automation(namespace: string, policySelector?: LabelSelector): ImageUpdateAutomation {
  return {
    kind: 'ImageUpdateAutomation',
    apiVersion: 'image.toolkit.fluxcd.io/v1',
    metadata: { namespace, name: 'a', labels: {}, annotations: {} },
    source: { file: 'x.yaml', line: 1 },
    spec: {
      sourceRef: { kind: 'GitRepository', namespace, name: 'g' },
      interval: 1,
      suspend: false,
      git: { commit: { author: { name: '', email: 'a@b' }, messageTemplateValues: {} } },
      update: { path: '.', strategy: 'Setters' },
      ...(policySelector ? { policySelector } : {}),
    },
  };
}

describe('selectPolicies', () => {
  const config = emptyConfig();
  for (const p of [
    policy('apps', 'b', { team: 'x', tier: 'web' }),
    policy('apps', 'a', { team: 'y' }),
    policy('apps', 'c'),
    policy('other', 'd', { team: 'x' }),
  ]) {
    config.imagePolicies.set(`${p.metadata.namespace}/${p.metadata.name}`, p);
  }
  const names = (ps: ImagePolicy[]) => ps.map((p) => p.metadata.name);

  test('no selector: every policy of the namespace, sorted', () => {
    assert.deepEqual(names(selectPolicies(config, automation('apps'))), ['a', 'b', 'c']);
  });
  test('an empty selector matches everything in the namespace', () => {
    assert.deepEqual(
      names(selectPolicies(config, automation('apps', { matchLabels: {}, matchExpressions: [] }))),
      ['a', 'b', 'c'],
    );
  });
  test('matchLabels', () => {
    assert.deepEqual(
      names(selectPolicies(config, automation('apps', { matchLabels: { team: 'x' }, matchExpressions: [] }))),
      ['b'],
    );
  });
  test('matchExpressions', () => {
    const sel = (
      operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist',
      values: string[] = [],
    ): LabelSelector => ({
      matchLabels: {},
      matchExpressions: [{ key: 'team', operator, values }],
    });
    assert.deepEqual(names(selectPolicies(config, automation('apps', sel('In', ['x', 'y'])))), ['a', 'b']);
    assert.deepEqual(names(selectPolicies(config, automation('apps', sel('NotIn', ['x'])))), ['a', 'c']);
    assert.deepEqual(names(selectPolicies(config, automation('apps', sel('Exists')))), ['a', 'b']);
    assert.deepEqual(names(selectPolicies(config, automation('apps', sel('DoesNotExist')))), ['c']);
  });
  test('matchLabels and expressions must all hold', () => {
    assert.equal(
      matchesSelector(
        { team: 'x', tier: 'web' },
        {
          matchLabels: { team: 'x' },
          matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['web'] }],
        },
      ),
      false,
    );
  });
});
