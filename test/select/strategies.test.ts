import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { compareGoStrings, parseGoFloat } from '../../src/go/index.js';
import { numericalLatest } from '../../src/select/strategies/numerical.js';
import { alphabeticalLatest } from '../../src/select/strategies/alphabetical.js';

describe('parseGoFloat (strconv.ParseFloat(s, 64))', () => {
  const ok: [string, number][] = [
    ['1', 1],
    ['-62', -62],
    ['+7', 7],
    ['1655866680', 1655866680],
    ['47.40896403322944', 47.40896403322944],
    ['.5', 0.5],
    ['5.', 5],
    ['1e3', 1000],
    ['1E-2', 0.01],
    ['1_000', 1000],
    ['1_0.5_0e1_0', 10.5e10],
    ['0x1p-2', 0.25],
    ['0X1.8P1', 3],
    ['0x_1p4', 16],
    ['0x.8p1', 1],
    ['inf', Infinity],
    ['-Infinity', -Infinity],
    ['+INF', Infinity],
    ['1e-400', 0],
    ['007', 7],
  ];
  for (const [s, want] of ok)
    test(`${JSON.stringify(s)} = ${want}`, () => assert.equal(parseGoFloat(s), want));
  test('"nan" parses to NaN', () => assert.ok(Number.isNaN(parseGoFloat('NaN'))));

  const bad = [
    '',
    '1a',
    'b',
    '1.2.3',
    'e5',
    '1e',
    '1e+',
    '0x1',
    '0x',
    '0x1.8',
    '_1',
    '1_',
    '1__0',
    '1_.5',
    '1._5',
    '+nan',
    'infin',
    'info',
    '1e400',
    '-1e400',
    '0x1p2000',
    ' 1',
    '1 ',
    '١',
    '1,5',
    '--1',
    '.',
    '.e1',
  ];
  for (const s of bad) test(`${JSON.stringify(s)} does not parse`, () => assert.equal(parseGoFloat(s), null));
});

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
