/** SmallMap (src/util/small-map.ts): a Map's answers, its first entry held in place. */
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { SmallMap } from '../../src/util/small-map.js';

test('answers as a Map does, through the first entry, its replacement, and the Map from the second', () => {
  const small = new SmallMap<unknown, string>();
  const map = new Map<unknown, string>();
  const same = (keys: unknown[]) =>
    assert.deepEqual(
      [small.size, ...keys.map((k) => small.get(k))],
      [map.size, ...keys.map((k) => map.get(k))],
    );
  const keys = ['a', 'b', 0, -0, NaN, undefined, ''];
  same(keys);
  for (const [k, v] of [
    [undefined, 'none'],
    [undefined, 'none again'],
    [NaN, 'nan'],
    [0, 'zero'],
    [-0, 'minus zero'],
    ['a', 'a'],
    [NaN, 'nan again'],
  ] as [unknown, string][]) {
    small.set(k, v);
    map.set(k, v);
    same(keys);
  }
});

test('a first key that is NaN or undefined is found again, and replaced in place', () => {
  for (const k of [NaN, undefined]) {
    const small = new SmallMap<unknown, number>();
    small.set(k, 1);
    assert.deepEqual([small.size, small.get(k)], [1, 1]);
    small.set(k, 2);
    assert.deepEqual([small.size, small.get(k), small.get('other')], [1, 2, undefined]);
  }
});
