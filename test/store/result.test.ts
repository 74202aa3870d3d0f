/**
 * A base's lists as the writer keeps them (src/store/result.ts): a digest of each entry's JSON,
 * not the JSON, and an entry is carried only when its JSON is the base's, byte for byte.
 */
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { keptLists, resultFromStore, resultToStore } from '../../src/store/result.js';

const policies = (n: number, at = -1, changed: Record<string, unknown> = {}) =>
  Array.from({ length: n }, (_, i) => ({
    name: `flux-system/app-${i}`,
    candidate: '1.2.0',
    error: null,
    ...(i === at ? changed : {}),
  }));

test('a base keeps 32 bytes an entry and none of its JSON', () => {
  const kept = keptLists({ repositories: [], policies: policies(1000) });
  const p = kept.get('policies')!;
  assert.equal(p.digests.length, 32 * 1000);
  assert.equal(p.positions.size, 1000);
  assert.deepEqual(Object.keys(p).sort(), ['digests', 'positions']);
});

test('carried: the entries whose JSON is the base’s; a changed value or key order is its own', () => {
  const base = keptLists({ repositories: [], policies: policies(100) });
  const cases: [string, Record<string, unknown>[]][] = [
    ['a changed value', policies(100, 7, { candidate: '1.3.0' })],
    ['an added key', policies(100, 7, { detail: 'x' })],
    // The same fields in another order are other JSON: read back from the base, they would differ.
    [
      'reordered keys',
      policies(100).map((e, i) => (i === 7 ? { error: e.error, name: e.name, candidate: e.candidate } : e)),
    ],
  ];
  for (const [what, list] of cases) {
    const result = { repositories: [], policies: list };
    const stored = resultToStore(result, [], base) as { policies: { own: [number, unknown][] } };
    assert.deepEqual(
      stored.policies.own.map(([pos]) => pos),
      [7],
      what,
    );
    const back = resultFromStore(
      JSON.parse(JSON.stringify(stored)),
      [],
      { repositories: [], policies: policies(100) },
      'run 2',
    );
    assert.equal(JSON.stringify(back), JSON.stringify(result), what);
  }
});
