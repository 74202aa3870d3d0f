import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { compareVersions, parseSemverRange, parseVersion, versionKey } from '../../src/go/semver.js';

function v(s: string) {
  const p = parseVersion(s);
  assert.ok(p, `${s} should parse`);
  return p;
}

describe('parseVersion (fluxcd/pkg ParseVersion)', () => {
  test('needs two dots; v prefix and leading zeros allowed', () => {
    for (const ok of [
      '1.2.3',
      'v1.2.3',
      'v2025.07.03',
      '01.002.0003',
      '1.2.3-rc.1',
      '1.2.3+build.5',
      '1.2.3-a-b+c-d',
      '1.2-3.4',
    ]) {
      assert.ok(parseVersion(ok), ok);
    }
    for (const bad of [
      '1.2',
      'v1',
      '1.2.3.4',
      'V1.2.3',
      'vv1.2.3',
      '1.2.x',
      '1.2.3-',
      '1.2.3+',
      '1.2.3-01',
      '1.2.3-a..b',
      '1.2.3 ',
      ' 1.2.3',
      '1.2.3_4',
      '',
      '..',
      '1..3',
    ]) {
      assert.equal(parseVersion(bad), null, bad);
    }
  });

  test('segments are uint64', () => {
    assert.ok(parseVersion('18446744073709551615.0.0'));
    assert.equal(parseVersion('18446744073709551616.0.0'), null);
    assert.equal(versionKey(v('0000000000000000000001.0.0')), '1.0.0');
  });

  test('keeps build metadata in the result but not in the key', () => {
    const p = v('v1.2.3-rc.1+build.7');
    assert.equal(p.original, 'v1.2.3-rc.1+build.7');
    assert.equal(p.metadata, 'build.7');
    assert.equal(versionKey(p), '1.2.3-rc.1');
  });
});

describe('compareVersions (Masterminds Compare)', () => {
  const ordered = [
    '1.0.0-2',
    '1.0.0-10',
    '1.0.0-alpha',
    '1.0.0-alpha.1',
    '1.0.0-alpha.beta',
    '1.0.0-beta',
    '1.0.0-beta.2',
    '1.0.0-beta.11',
    '1.0.0-rc.1',
    '1.0.0',
    '1.0.1',
    '1.1.0',
    '2.0.0',
    '10.0.0',
    '99999999999999999.0.0',
  ];
  test('orders by precedence', () => {
    for (let i = 0; i + 1 < ordered.length; i++) {
      assert.equal(
        compareVersions(v(ordered[i]!), v(ordered[i + 1]!)),
        -1,
        `${ordered[i]} < ${ordered[i + 1]}`,
      );
      assert.equal(compareVersions(v(ordered[i + 1]!), v(ordered[i]!)), 1);
    }
  });
  test('prefix, leading zeros and build metadata do not matter', () => {
    assert.equal(compareVersions(v('1.0.0'), v('v1.0.0')), 0);
    assert.equal(compareVersions(v('1.0.0+a'), v('1.0.0+b')), 0);
    assert.equal(compareVersions(v('01.0.0'), v('1.0.0')), 0);
  });
  test('a numeric prerelease identifier beyond uint64 compares as text', () => {
    assert.equal(compareVersions(v('1.0.0-99999999999999999999'), v('1.0.0-alpha')), -1);
    assert.equal(compareVersions(v('1.0.0-18446744073709551615'), v('1.0.0-alpha')), -1);
  });
});

describe('parseSemverRange (Masterminds NewConstraint + Check)', () => {
  const table: [string, string, boolean][] = [
    ['1.0.x', '1.0.5', true],
    ['1.0.x', '1.1.0', false],
    ['1.x', '1.9.0', true],
    ['*', '5.0.0', true],
    ['*', '5.0.0-rc.1', false],
    ['>=1.0', '1.0.0', true],
    ['>=1.0', '0.9.9', false],
    ['>0,<2.0', '1.5.0', true],
    ['>0,<2.0', '2.0.0', false],
    ['>1.0 <2.0', '1.5.0', true],
    ['>1.0, <2.0', '2.1.0', false],
    ['<1.0 || >=3.0', '0.5.0', true],
    ['<1.0 || >=3.0', '2.0.0', false],
    ['<1.0 || >=3.0', '3.1.0', true],
    ['1.0 - 2.0', '2.0.0', true],
    ['1.0 - 2.0', '2.0.1', true], // `<= 2.0` allows 2.0.x: Masterminds' dirty <=
    ['1.0 - 2.0', '2.1.0', false],
    ['1.2.3 - 1.4.5', '1.4.6', false],
    ['~1.2.3', '1.2.9', true],
    ['~1.2.3', '1.3.0', false],
    ['~1', '1.9.0', true],
    ['~1', '2.0.0', false],
    ['^1.2.3', '1.9.9', true],
    ['^1.2.3', '2.0.0', false],
    ['^0.2.3', '0.2.9', true],
    ['^0.2.3', '0.3.0', false],
    ['^0.0.3', '0.0.3', true],
    ['^0.0.3', '0.0.4', false],
    ['!=1.2.3', '1.2.3', false],
    ['!=1.2.3', '1.2.4', true],
    ['!=1.2.x', '1.2.4', false],
    ['=1.0.0', 'v1.0.0', true],
    ['v1.0.x', '1.0.1', true],
    ['>11', '11.1.0', false],
    ['>11', '12.0.0', true],
    ['>11.1', '11.1.9', false],
    ['>11.1', '11.2.0', true],
    ['<=1.2', '1.2.9', true],
    ['<=1.2', '1.3.0', false],
    // `<=` with a wildcard: Masterminds' dirty <= (major and, unless it is x, minor bound the range).
    ['<=1.x', '1.9.9', true],
    ['<=1.x', '1.99.0', true],
    ['<=1.x', '0.1.0', true],
    ['<=1.x', '2.0.0', false],
    ['<=1.2.x', '1.2.99', true],
    ['<=1.2.x', '1.3.0', false],
    ['<=1', '1.99.0', true],
    ['<=1', '2.0.0', false],
    // `<` with a wildcard is not dirty: below 1.0.0.
    ['<1.x', '0.9.0', true],
    ['<1.x', '1.5.0', false],
    // Prereleases only match an AND-group that names one.
    ['>=1.0.0', '1.1.0-rc.1', false],
    ['>=1.0.0-0', '1.1.0-rc.1', true],
    ['>=1.0.0-0 <2.0.0', '1.1.0-rc.1', true],
    ['>=1.0.0-0 || >=1.0.0', '1.1.0-rc.1', true],
    ['>=1.0.0 || <0.0.1-0', '1.1.0-rc.1', false],
    ['~1.2.3-beta.2', '1.2.3-beta.4', true],
    ['^1.2.3-beta.2', '1.2.3-beta.1', false],
  ];
  for (const [range, version, want] of table) {
    test(`${JSON.stringify(range)} ${want ? 'admits' : 'rejects'} ${version}`, () => {
      assert.equal(
        parseSemverRange(range).check(
          v(version.includes('.') && version.split('.').length >= 3 ? version : `${version}`),
        ),
        want,
      );
    });
  }

  test('invalid ranges throw with Masterminds reason', () => {
    for (const bad of ['1.0.0p', '1x', 'x1', '-1', 'a', '', '*-*', '>= 1.0 ||', '1.2.3 -', '>>1']) {
      assert.throws(() => parseSemverRange(bad), Error, bad);
    }
    assert.throws(() => parseSemverRange('a'), { message: 'improper constraint: a' });
  });

  test('does not stall on a long hostile range', () => {
    assert.throws(() => parseSemverRange(`${'1 '.repeat(5000)}!`));
  });
});
