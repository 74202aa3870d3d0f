/**
 * Policies of equal selection specs share one compiled policy (issue 27: the daemon at 10,000
 * policies of one `semver: >=1.0.0` kept a compilation of a dozen closures for each, and each
 * running pass made its own). Counted, not timed: N equal specs, one compilation.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sharedPolicy, sharedPolicyCount, type PolicySpec } from '../../src/select/index.js';

const semver = (range: string): PolicySpec => ({ policy: { strategy: 'semver', range } });

test('1,000 policies of one spec share one compiled policy; another spec or exclusion list has its own', () => {
  const before = sharedPolicyCount();
  // Each policy's spec is its own object, as the loader makes them.
  const compiled = Array.from({ length: 1000 }, () => sharedPolicy(semver('>=1.0.0'), ['^dev-']));
  assert.equal(new Set(compiled).size, 1, 'one compilation for 1,000 equal specs');
  assert.equal(sharedPolicyCount() - before, 1);
  const other = sharedPolicy(semver('>=2.0.0'), ['^dev-']);
  const otherList = sharedPolicy(semver('>=1.0.0'), []);
  assert.notEqual(other, compiled[0]);
  assert.notEqual(otherList, compiled[0]);
  assert.equal(sharedPolicyCount() - before, 3);
  // The shared one answers as its own compilation would.
  assert.equal(compiled[0]!.select(['1.0.0', 'dev-9.0.0', '1.2.0']).tag, '1.2.0');
  assert.equal(other.select(['1.0.0', '1.2.0']).tag, null);
});

test('a spec that does not compile throws each time and is not kept', () => {
  const before = sharedPolicyCount();
  for (let i = 0; i < 2; i++) assert.throws(() => sharedPolicy(semver('!!'), []), /invalid semver range/);
  assert.equal(sharedPolicyCount(), before);
});
