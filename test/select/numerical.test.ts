import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { numericalLatest } from '../../src/select/index.js';

describe('numericalLatest (Flux Numerical.Latest)', () => {
  test('asc and desc', () => {
    assert.deepEqual(numericalLatest('asc', ['5', '-8', '25', '1e2']), { latest: '1e2' });
    assert.deepEqual(numericalLatest('desc', ['5', '-8', '25', '1e2']), { latest: '-8' });
  });
  test('one value that is not a number fails the whole list', () => {
    assert.deepEqual(numericalLatest('asc', ['0', '1a', 'b']), {
      error: "failed to parse invalid numeric value '1a'",
    });
  });
  test('equal values: the later one wins', () => {
    assert.deepEqual(numericalLatest('asc', ['1', '1.0']), { latest: '1.0' });
  });
  test('empty list', () => {
    assert.deepEqual(numericalLatest('asc', []), { error: 'version list argument cannot be empty' });
  });
});
