import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FirstPositions } from '../../src/store/positions.js';

test('FirstPositions: the first position of each hash, none for a hash not there', () => {
  const hashes = [7, 3, 7, 0, 0x3fffffff, 3, 12];
  const p = new FirstPositions(hashes.length, (i) => hashes[i]!);
  assert.equal(p.get(7), 0);
  assert.equal(p.get(3), 1);
  assert.equal(p.get(0), 3);
  assert.equal(p.get(0x3fffffff), 4);
  assert.equal(p.get(12), 6);
  for (const missing of [1, 2, 4, 8, 11, 13, 0x3ffffffe])
    assert.equal(p.get(missing), undefined, String(missing));
});

test('FirstPositions: an empty list, and a long one against a Map', () => {
  assert.equal(new FirstPositions(0, () => 0).get(0), undefined);
  let h = 1;
  const hashes = Array.from({ length: 5000 }, () => (h = (Math.imul(h, 48271) >>> 0) % 3000));
  const p = new FirstPositions(hashes.length, (i) => hashes[i]!);
  const first = new Map<number, number>();
  hashes.forEach((x, i) => first.has(x) || first.set(x, i));
  for (let x = 0; x < 3000; x++) assert.equal(p.get(x), first.get(x), String(x));
});
