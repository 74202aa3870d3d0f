import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sortTags, tagListChecksum } from '../../src/store/tags.js';

test('sortTags: code-unit order, de-duplicated, whatever the input order', () => {
  assert.deepEqual(sortTags(['b', 'a', 'B', 'a', '10', '9']), ['10', '9', 'B', 'a', 'b']);
  // A surrogate pair sorts by its code units: below U+FFFF, unlike code-point order.
  assert.deepEqual(sortTags(['\uFFFF', '\u{10000}']), ['\u{10000}', '\uFFFF']);
  assert.deepEqual(sortTags(new Set(['z', 'y'])), ['y', 'z']);
  assert.deepEqual(sortTags([]), []);
});

test('sortTags: an already sorted list comes back as a copy, equal duplicates still dropped', () => {
  const sorted = ['1.0.0', '1.1.0', '1.2.0'];
  const out = sortTags(sorted);
  assert.deepEqual(out, sorted);
  assert.notEqual(out, sorted);
  out.push('x');
  assert.equal(sorted.length, 3);
  assert.deepEqual(sortTags(['a', 'a', 'b']), ['a', 'b']);
  assert.deepEqual(sortTags(['a', 'b', 'b', 'c']), ['a', 'b', 'c']);
});

test('tagListChecksum: the same for any order and duplicates of the same tags', () => {
  assert.equal(tagListChecksum(['b', 'a', 'a']), tagListChecksum(['a', 'b']));
  assert.notEqual(tagListChecksum(['a', 'b']), tagListChecksum(['a', 'c']));
});
