import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { compareGoStrings } from '../../src/go/index.js';
import { alphabeticalLatest } from '../../src/select/index.js';

describe('alphabetical (Go string order)', () => {
  test('byte order, not locale order', () => {
    assert.deepEqual(alphabeticalLatest('asc', ['a', 'B', 'b', 'Z']), { latest: 'b' });
    assert.deepEqual(alphabeticalLatest('desc', ['a', 'B', 'b', 'Z']), { latest: 'B' });
    assert.deepEqual(alphabeticalLatest('asc', ['16.04', '16.04.1', '20.10', '20.04']), { latest: '20.10' });
  });
  test('UTF-8 order: code points above U+FFFF sort after U+E000–U+FFFF', () => {
    assert.equal(compareGoStrings('\u{1F600}', '\uFFFD'), 1);
    assert.equal(compareGoStrings('\uFFFD', '\u{1F600}'), -1);
    assert.equal('\u{1F600}' < '\uFFFD', true); // JavaScript's UTF-16 order disagrees
    assert.equal(compareGoStrings('ab', 'abc'), -1);
    assert.equal(compareGoStrings('abc', 'abc'), 0);
  });
});
