import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseGoFloat } from '../../src/go/index.js';

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
