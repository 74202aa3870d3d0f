import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { formatDuration, parseDuration } from '../../src/config/duration.js';
import { imageRepositoryProblem } from '../../src/config/imageref.js';
import { gitUrlProblem } from '../../src/config/schema/gitrepository.js';
import { closest } from '../../src/config/suggest.js';

describe('parseDuration (Go syntax)', () => {
  for (const [text, ms] of [
    ['1m30s', 90_000],
    ['5m', 300_000],
    ['1h', 3_600_000],
    ['500ms', 500],
    ['1.5h', 5_400_000],
    ['1m0s', 60_000],
    ['0', 0],
    ['2h45m', 9_900_000],
    ['1000us', 1],
    // Go accepts both micro signs: U+00B5 and U+03BC.
    ['2000\u00b5s', 2],
    ['3000\u03bcs', 3],
  ] as const) {
    test(`${text} = ${ms} ms`, () => assert.equal(parseDuration(text), ms));
  }
  for (const text of ['5 minutes', '5', '', 'm', '1d', '1h 30m', '.m', '5M']) {
    test(`rejects ${JSON.stringify(text)}`, () => assert.throws(() => parseDuration(text), /not a duration/));
  }
  test('formatDuration', () => assert.equal(formatDuration(5_430_500), '1h30m30s500ms'));
});

describe('image repository names', () => {
  for (const ok of [
    'nginx',
    'library/nginx',
    'ghcr.io/org/app',
    'localhost:5000/a/b',
    'registry.example.com:443/team/app-x_y.z',
    '127.0.0.1:5000/app',
  ]) {
    test(`accepts ${ok}`, () => assert.equal(imageRepositoryProblem(ok), undefined));
  }
  for (const [bad, why] of [
    ['https://ghcr.io/org/app', /scheme/],
    ['ghcr.io/org/app:1.0', /has a tag/],
    ['localhost:5000/app:latest', /has a tag/],
    ['ghcr.io/org/app@sha256:abc', /has a digest/],
    ['ghcr.io/Org/app', /lowercase/],
    ['ghcr.io//app', /not a valid image repository/],
    ['', /not a valid image repository/],
  ] as const) {
    test(`rejects ${bad}`, () => assert.match(imageRepositoryProblem(bad) ?? '', why));
  }
});

describe('git URLs', () => {
  for (const ok of [
    'https://github.com/o/r',
    'http://h/r.git',
    'ssh://git@github.com/o/r',
    'git@github.com:o/r.git',
    'file:///srv/git/r',
    '/srv/git/r',
    './repo',
    '../repo',
  ]) {
    test(`accepts ${ok}`, () => assert.equal(gitUrlProblem(ok), undefined));
  }
  for (const bad of ['ftp://h/r', 'git@github.com:', '', 'https://']) {
    test(`rejects ${JSON.stringify(bad)}`, () => assert.notEqual(gitUrlProblem(bad), undefined));
  }
});

test('closest suggests typos and case slips', () => {
  assert.deepEqual(closest('filterTag', ['filterTags', 'policy', 'interval']), ['filterTags']);
  assert.deepEqual(closest('ImageRepositoryRef', ['imageRepositoryRef', 'policy']), ['imageRepositoryRef']);
  assert.deepEqual(closest('zzz', ['policy']), []);
});
