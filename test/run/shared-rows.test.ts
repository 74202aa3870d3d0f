/**
 * The report rows a daemon's passes share (src/run/shared-rows.ts): an unchanged row is the
 * row the pass before reported, the same frozen object; a changed one is new; the rows of
 * objects a new configuration no longer has are forgotten.
 */
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import type { Config } from '../../src/config/index.js';
import type { PolicyReport, RepositoryReport } from '../../src/records/index.js';
import { SharedRows } from '../../src/run/shared-rows.js';

const policy = (over: Partial<PolicyReport> = {}): PolicyReport => ({
  name: 'apps/web',
  candidate: '1.2.0',
  highWater: '1.2.0',
  error: null,
  ...over,
});
const repository = (over: Partial<RepositoryReport> = {}): RepositoryReport => ({
  name: 'apps/web',
  tags: 3,
  scanned: false,
  anomalies: [],
  error: null,
  ...over,
});
const configOf = (repositories: string[], policies: string[]): Config =>
  ({
    imageRepositories: new Map(repositories.map((n) => [n, {}])),
    imagePolicies: new Map(policies.map((n) => [n, {}])),
  }) as unknown as Config;

test('an equal row is the one reported before, frozen to its nested values', () => {
  const rows = new SharedRows();
  const first = rows.policy(policy({ unverified: { tag: '1.3.0', why: 'no signature' } }));
  assert.ok(Object.isFrozen(first) && Object.isFrozen(first.unverified));
  assert.equal(rows.policy(policy({ unverified: { tag: '1.3.0', why: 'no signature' } })), first);
  const repo = rows.repository(repository());
  assert.ok(Object.isFrozen(repo) && Object.isFrozen(repo.anomalies));
  assert.equal(rows.repository(repository()), repo);
});

test('a changed value, an added or missing key, or another order is a new row, kept from then on', () => {
  const rows = new SharedRows();
  const first = rows.policy(policy());
  for (const [what, row] of [
    ['a value', policy({ candidate: '1.3.0' })],
    ['a nested value', policy({ unverified: { tag: '1.3.0', why: 'x' } })],
    ['a missing key', { name: 'apps/web', candidate: '1.2.0', highWater: '1.2.0' } as PolicyReport],
    ['another order', { candidate: '1.2.0', name: 'apps/web', highWater: '1.2.0', error: null }],
  ] as const) {
    const shared = rows.policy(row);
    assert.notEqual(shared, first, what);
    assert.deepEqual(shared, row, what);
    assert.equal(JSON.stringify(shared), JSON.stringify(row), what);
    assert.equal(rows.policy(structuredClone(row)), shared, `${what}, seen again`);
  }
  const failed = rows.repository(repository({ error: 'timeout', errorAt: '2026-12-06T00:00:00.000Z' }));
  assert.notEqual(rows.repository(repository()), failed);
});

test('rows of objects a new configuration lacks are forgotten; the others are kept', () => {
  const rows = new SharedRows();
  const config = configOf(['apps/web', 'apps/api'], ['apps/web', 'apps/api']);
  rows.prune(config);
  const web = rows.policy(policy());
  const api = rows.policy(policy({ name: 'apps/api' }));
  const apiRepo = rows.repository(repository({ name: 'apps/api' }));
  rows.prune(configOf(['apps/web'], ['apps/web']));
  assert.equal(rows.policy(policy()), web);
  assert.notEqual(rows.policy(policy({ name: 'apps/api' })), api);
  assert.notEqual(rows.repository(repository({ name: 'apps/api' })), apiRepo);
});
