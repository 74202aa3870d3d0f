/** Every strategy behind the one interface, through the factory: how each reads, orders and keys values. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { strategyFor } from '../../src/select/index.js';
import type { ImagePolicy } from '../../src/config/index.js';

type Choice = ImagePolicy['spec']['policy'];

const built = new Map([
  ['a', new Date('2026-01-01T00:00:00Z')],
  ['b', new Date('2026-02-01T00:00:00Z')],
]);

const cases: { policy: Choice; older: string; newer: string; unreadable: string | null; key: string }[] = [
  {
    policy: { strategy: 'semver', range: '>=1.0.0' },
    older: '1.2.0',
    newer: '1.10.0',
    unreadable: 'latest',
    key: 'semver 1.10.0',
  },
  {
    policy: { strategy: 'alphabetical', order: 'asc' },
    older: 'a',
    newer: 'b',
    unreadable: null,
    key: 'alphabetical "b"',
  },
  {
    policy: { strategy: 'alphabetical', order: 'desc' },
    older: 'b',
    newer: 'a',
    unreadable: null,
    key: 'alphabetical "a"',
  },
  {
    policy: { strategy: 'numerical', order: 'asc' },
    older: '9',
    newer: '10',
    unreadable: 'x1',
    key: 'numerical 10',
  },
  {
    policy: { strategy: 'numerical', order: 'desc' },
    older: '10',
    newer: '9',
    unreadable: 'NaN',
    key: 'numerical 9',
  },
  {
    policy: { strategy: 'newestBuild' },
    older: 'a',
    newer: 'b',
    unreadable: 'c',
    key: 'built 2026-02-01T00:00:00.000Z',
  },
];

describe('strategies behind one interface', () => {
  for (const c of cases) {
    test(JSON.stringify(c.policy), () => {
      const s = strategyFor(c.policy);
      const opts = { buildTimes: built };
      const older = s.parse(c.older, c.older, opts);
      const newer = s.parse(c.newer, c.newer, opts);
      assert.ok(older !== null && newer !== null);
      assert.ok(s.newer(newer, older) > 0);
      assert.ok(s.newer(older, newer) < 0);
      assert.equal(s.newer(newer, newer), 0);
      assert.equal(s.key(newer), c.key);
      if (c.unreadable !== null) assert.equal(s.parse(c.unreadable, c.unreadable, opts), null);
    });
  }
  test('semver: the range decides eligibility, not order', () => {
    const s = strategyFor({ strategy: 'semver', range: '<2.0.0' });
    assert.equal(s.eligible(s.parse('1.9.0', '1.9.0', undefined)), true);
    assert.equal(s.eligible(s.parse('2.0.0', '2.0.0', undefined)), false);
  });
  test('only numerical fails the whole policy on one unreadable value (Flux)', () => {
    assert.deepEqual(
      cases.map((c) => strategyFor(c.policy).strict),
      [false, false, false, true, true, false],
    );
  });
});
