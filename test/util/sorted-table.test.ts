/** SortedTable (src/util/sorted-table.ts): a Map's answers over sorted keys, without a Map's table. */
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { getHeapSpaceStatistics } from 'node:v8';
import { lookupOf, SortedTable, sortedUnique } from '../../src/util/sorted-table.js';

const sorted = (keys: string[]): string[] => [...new Set(keys)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

test('answers as a Map of the same entries does, present keys and absent ones', () => {
  // Code-unit order: a surrogate pair (😀, 0xD83D…) sorts before U+FFFF, and 'Z' before 'a'.
  const keys = sorted([
    'a',
    'Z',
    '',
    'flux-system/app-1',
    'flux-system/app-10',
    'flux-system/app-2',
    '😀',
    '\uffff',
    'é',
  ]);
  const values = keys.map((k, i) => ({ k, i }));
  const table = new SortedTable(keys, values);
  const map = new Map(keys.map((k, i) => [k, values[i]]));
  assert.equal(table.size, map.size);
  assert.deepEqual(table.values(), [...map.values()]);
  for (const k of [...keys, 'b', 'flux-system/app-3', 'flux-system/app', '\ud83d', 'zz', ' '])
    assert.deepEqual([table.get(k), table.has(k)], [map.get(k), map.has(k)], k);
  const empty = new SortedTable<number>([], []);
  assert.deepEqual([empty.size, empty.get('a'), empty.has('')], [0, undefined, false]);
});

test('refuses keys out of order, repeated, or not one a value', () => {
  assert.throws(() => new SortedTable(['b', 'a'], [1, 2]), /out of order at 1/);
  assert.throws(() => new SortedTable(['a', 'a'], [1, 2]), /out of order at 1/);
  assert.throws(() => new SortedTable(['a'], [1, 2]), /1 keys, 2 values/);
});

test("holds 10,000 entries without a table in V8's large-object space, where a Map's goes", () => {
  const large = () =>
    getHeapSpaceStatistics()
      .filter((s) => s.space_name === 'large_object_space' || s.space_name === 'new_large_object_space')
      .reduce((sum, s) => sum + s.space_used_size, 0);
  const keys = Array.from({ length: 10_000 }, (_, i) => `flux-system/app-${String(i).padStart(5, '0')}`);
  const values = keys.map((_, i) => i);
  const grows = (make: () => unknown): number => {
    const before = large();
    const kept = make();
    const after = large();
    assert.ok(kept);
    return after - before;
  };
  const map = grows(() => new Map(keys.map((k, i) => [k, values[i]])));
  const table = grows(() => new SortedTable(keys, values));
  assert.ok(map > 200_000, `a Map of 10,000: ${map} bytes there`);
  assert.equal(table, 0, `a SortedTable of 10,000: ${table} bytes there`);
});

test('ifSorted makes a table of keys in order and answers null for keys that are not', () => {
  const t = SortedTable.ifSorted(['a', 'b', 'c'], [1, 2, 3]);
  assert.deepEqual([t?.get('b'), t?.size], [2, 3]);
  assert.equal(SortedTable.ifSorted(['a', 'c', 'b'], [1, 2, 3]), null);
  assert.equal(SortedTable.ifSorted(['a', 'a'], [1, 2]), null);
  assert.throws(() => SortedTable.ifSorted(['a'], [1, 2]), /1 keys, 2 values/);
});

test('lookupOf answers keys out of order or repeated through a Map, the last value of a key', () => {
  const l = lookupOf(['b', 'a', 'b'], [1, 2, 3]);
  assert.deepEqual([l.get('a'), l.get('b'), l.has('c'), l.size], [2, 3, false, 2]);
  assert.ok(lookupOf(['a', 'b'], [1, 2]) instanceof SortedTable);
});

test('valuesIfKeys gives a copy of the values for the very keys array, null for an equal one', () => {
  const keys = ['a', 'b'];
  const t = new SortedTable(keys, [1, 2]);
  const vals = t.valuesIfKeys(keys);
  assert.deepEqual(vals, [1, 2]);
  vals![0] = 9;
  assert.equal(t.get('a'), 1, "the copy is the caller's");
  assert.equal(t.valuesIfKeys(['a', 'b']), null);
});

test('sortedUnique: the distinct names in code-unit order, each at its first position', () => {
  assert.deepEqual(sortedUnique(['b', 'a', 'Z', 'b', 'a', '😀', '\uffff']), {
    keys: ['Z', 'a', 'b', '😀', '\uffff'],
    at: [2, 1, 0, 5, 6],
  });
  assert.deepEqual(sortedUnique([]), { keys: [], at: [] });
});
