import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UploadLimits } from '../../src/serve/hook-limits.js';

test('UploadLimits: a place per address and in all; released once however often the request ends', () => {
  const seen: number[] = [];
  const limits = new UploadLimits({ perPeer: 2, total: 3, onChange: (n) => seen.push(n) });
  const a1 = limits.admit('a')!;
  const a2 = limits.admit('a')!;
  assert.equal(limits.admit('a'), null, 'a third from one address is refused');
  const b1 = limits.admit('b')!;
  assert.equal(limits.admit('c'), null, 'all places taken');
  // close, response and deadline may all end one request: the place comes back once.
  a1.release();
  a1.release();
  a1.release();
  assert.equal(a1.open, false);
  assert.equal(limits.open, 2);
  assert.ok(limits.admit('c'), 'the place came back');
  assert.equal(limits.admit('a'), null, 'still at the total');
  a2.release();
  b1.release();
  assert.ok(limits.admit('a'));
  assert.deepEqual(seen, [1, 2, 3, 2, 3, 2, 1, 2]);
});
