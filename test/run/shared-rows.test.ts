/**
 * The report rows a daemon's passes share (src/run/shared-rows.ts): an unchanged row is the
 * row the pass before reported, the same frozen object; a changed one is new, and is what a
 * fresh row would be, byte for byte; the rows of objects a new configuration no longer has are
 * forgotten.
 */
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import type { Config } from '../../src/config/index.js';
import { policyReport, type PolicyOutcome } from '../../src/run/policies.js';
import { SharedRows, unscannedRow } from '../../src/run/shared-rows.js';

const outcome = (over: Partial<PolicyOutcome> = {}): PolicyOutcome =>
  ({
    name: 'apps/web',
    candidate: { name: 'ghcr.io/org/web', tag: '1.2.0', digest: null },
    ratchet: { highWater: '1.2.0' },
    error: null,
    unverified: null,
    ...over,
  }) as unknown as PolicyOutcome;
const configOf = (repositories: string[], policies: string[]): Config =>
  ({
    imageRepositories: new Map(repositories.map((n) => [n, {}])),
    imagePolicies: new Map(policies.map((n) => [n, {}])),
  }) as unknown as Config;

test('an equal row is the one reported before, frozen to its nested values', () => {
  const rows = new SharedRows();
  const unverified = () => outcome({ unverified: { tag: '1.3.0', why: 'no signature' } });
  const first = rows.policy(unverified());
  assert.ok(Object.isFrozen(first) && Object.isFrozen(first.unverified));
  assert.equal(rows.policy(unverified()), first);
  const repo = rows.unscanned('apps/web', 3, null, undefined);
  assert.ok(Object.isFrozen(repo) && Object.isFrozen(repo.anomalies));
  assert.equal(rows.unscanned('apps/web', 3, null, undefined), repo);
});

test('a changed field is a new row, the same JSON as a fresh one, and kept from then on', () => {
  const rows = new SharedRows();
  let previous = rows.policy(outcome());
  for (const [what, o] of [
    ['the candidate', outcome({ candidate: { name: 'ghcr.io/org/web', tag: '1.3.0' } as never })],
    [
      'the high-water mark',
      outcome({
        candidate: { name: 'ghcr.io/org/web', tag: '1.3.0' } as never,
        ratchet: { highWater: '1.4.0' } as never,
      }),
    ],
    ['no candidate', outcome({ candidate: null, error: 'no tag matches' })],
    ['a failed verification', outcome({ unverified: { tag: '1.3.0', why: 'x' } })],
    ['its reason', outcome({ unverified: { tag: '1.3.0', why: 'y' } })],
  ] as const) {
    const shared = rows.policy(o);
    assert.notEqual(shared, previous, what);
    assert.equal(JSON.stringify(shared), JSON.stringify(policyReport(o)), what);
    assert.equal(rows.policy(o), shared, `${what}, seen again`);
    previous = shared;
  }
  let before = rows.unscanned('apps/web', 3, null, undefined);
  const cases: [string, Parameters<typeof unscannedRow>][] = [
    ['tags', ['apps/web', 4, null, undefined]],
    ['an error', ['apps/web', 4, 'timeout', '2026-12-06T00:00:00.000Z']],
    ['when it was said', ['apps/web', 4, 'timeout', '2026-12-06T00:01:00.000Z']],
    ['what was said', ['apps/web', 4, 'connection refused', '2026-12-06T00:01:00.000Z']],
  ];
  for (const [what, args] of cases) {
    const row = rows.unscanned(...args);
    assert.notEqual(row, before, what);
    assert.equal(JSON.stringify(row), JSON.stringify(unscannedRow(...args)), what);
    before = row;
  }
});

test('rows of objects a new configuration lacks are forgotten; the others are kept', () => {
  const rows = new SharedRows();
  rows.prune(configOf(['apps/web', 'apps/api'], ['apps/web', 'apps/api']));
  const web = rows.policy(outcome());
  const api = rows.policy(outcome({ name: 'apps/api' }));
  const apiRepo = rows.unscanned('apps/api', 1, null, undefined);
  rows.prune(configOf(['apps/web'], ['apps/web']));
  assert.equal(rows.policy(outcome()), web);
  assert.notEqual(rows.policy(outcome({ name: 'apps/api' })), api);
  assert.notEqual(rows.unscanned('apps/api', 1, null, undefined), apiRepo);
});
