import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { compilePolicy, type PolicySpec } from '../../src/select/index.js';

const SIG = ['^.*\\.sig$'];
const semver = (range: string, filterTags?: PolicySpec['filterTags']): PolicySpec => ({
  policy: { strategy: 'semver', range },
  filterTags,
});

describe('select: the pipeline', () => {
  test('exclusion, filter, extract, order; reports every count', () => {
    const p = compilePolicy(semver('>=1.0.0', { pattern: '^release-(?P<v>.*)$', extract: '$v' }), SIG);
    const sel = p.select([
      'release-1.0.0',
      'release-1.2.0',
      'release-1.9.0.sig',
      'release-2.0.0-rc.1',
      'release-junk',
      'v3.0.0',
      'release-0.9.0',
    ]);
    assert.equal(sel.tag, 'release-1.2.0');
    assert.equal(sel.error, null);
    assert.deepEqual(sel.candidates, [
      { tag: 'release-1.2.0', extracted: '1.2.0', key: 'semver 1.2.0' },
      { tag: 'release-1.0.0', extracted: '1.0.0', key: 'semver 1.0.0' },
    ]);
    assert.deepEqual([sel.excluded, sel.filteredOut, sel.unparsable, sel.outOfRange], [1, 1, 1, 2]);
  });

  test('the filter is unanchored; no extract means the whole tag', () => {
    const p = compilePolicy(
      { policy: { strategy: 'alphabetical', order: 'asc' }, filterTags: { pattern: 'main', extract: '' } },
      [],
    );
    assert.equal(p.select(['a-main-1', 'b-main-2', 'zzz']).tag, 'b-main-2');
  });

  test('build metadata is kept in the selected tag', () => {
    const p = compilePolicy(semver('1.x'), SIG);
    assert.equal(p.select(['1.0.0+a', '1.1.0+build.9', '1.0.5']).tag, '1.1.0+build.9');
  });

  test('equal versions: Flux keeps the first in its newest-string-first list (v1.0.0 over 1.0.0)', () => {
    const p = compilePolicy(semver('1.x'), []);
    assert.equal(p.select(['1.0.0', 'v1.0.0']).tag, 'v1.0.0');
    assert.equal(p.select(['v1.0.0', '1.0.0']).tag, 'v1.0.0');
  });

  test('prereleases only when the range names one', () => {
    assert.equal(compilePolicy(semver('>=1.0.0'), []).select(['1.0.0', '1.1.0-rc.1']).tag, '1.0.0');
    assert.equal(compilePolicy(semver('>=1.0.0-0'), []).select(['1.0.0', '1.1.0-rc.1']).tag, '1.1.0-rc.1');
  });

  test('numerical: one value that is not a number fails the policy, as in Flux', () => {
    const p = compilePolicy({ policy: { strategy: 'numerical', order: 'asc' } }, []);
    const sel = p.select(['10', '9', 'latest', '11']);
    assert.equal(sel.tag, null);
    assert.equal(sel.error, "failed to parse invalid numeric value 'latest'");
    assert.equal(sel.unparsable, 1);
    assert.equal(sel.candidates[0]?.tag, '11'); // still ranked, for explain
  });

  test('numerical with a filter: only the filtered values must be numbers', () => {
    const p = compilePolicy(
      {
        policy: { strategy: 'numerical', order: 'asc' },
        filterTags: { pattern: '^main-[a-f0-9]+-(?P<ts>[0-9]+)$', extract: '$ts' },
      },
      SIG,
    );
    const sel = p.select(['main-abc123-1655866680', 'main-def456-1651535374', 'latest', 'main-x-1']);
    assert.equal(sel.tag, 'main-abc123-1655866680');
    assert.equal(sel.candidates[0]?.key, 'numerical 1655866680');
  });

  test('numerical desc, and NaN is refused', () => {
    const p = compilePolicy({ policy: { strategy: 'numerical', order: 'desc' } }, []);
    assert.equal(p.select(['5', '-8', '25']).tag, '-8');
    assert.equal(p.select(['5', 'nan']).tag, null);
  });

  test('alphabetical asc and desc with extract', () => {
    const spec = (order: 'asc' | 'desc'): PolicySpec => ({
      policy: { strategy: 'alphabetical', order },
      filterTags: { pattern: '^foo-(?P<w>[a-z]+)$', extract: '$w' },
    });
    const tags = ['foo-aaa', 'bar-zzz', 'foo-ooo', 'foo-zzz'];
    assert.equal(compilePolicy(spec('asc'), []).select(tags).tag, 'foo-zzz');
    assert.equal(compilePolicy(spec('desc'), []).select(tags).tag, 'foo-aaa');
    assert.equal(compilePolicy(spec('asc'), []).key('foo-abc'), 'alphabetical "abc"');
  });

  test('two tags with the same extracted value: Flux keeps the least tag', () => {
    const p = compilePolicy(
      {
        policy: { strategy: 'alphabetical', order: 'asc' },
        filterTags: { pattern: '-(?P<w>z+)$', extract: '$w' },
      },
      [],
    );
    assert.equal(p.select(['b-zz', 'a-zz', 'c-z']).tag, 'a-zz');
  });

  test('errors say why there is no tag', () => {
    const p = compilePolicy(semver('2.x', { pattern: '^v', extract: '' }), SIG);
    assert.equal(p.select([]).error, 'no tags to choose from');
    assert.match(
      p.select(['a.sig', 'x1']).error ?? '',
      /^version list argument cannot be empty \(1 excluded by the exclusion list, 1 not matching filterTags.pattern "\^v"\)$/,
    );
    assert.match(
      p.select(['v1.0.0', 'vjunk']).error ?? '',
      /^unable to determine latest version from provided list \(1 is not a semantic version, 1 outside the range "2.x"\)$/,
    );
  });

  test('invalid range or regex throws at compile time, naming it', () => {
    assert.throws(() => compilePolicy(semver('*-*'), []), /invalid semver range "\*-\*"/);
    assert.throws(
      () => compilePolicy(semver('1.x', { pattern: '(', extract: '' }), []),
      /filterTags.pattern: invalid regular expression "\("/,
    );
    assert.throws(
      () => compilePolicy(semver('1.x'), ['[=']),
      /exclusionList: invalid regular expression "\[="/,
    );
  });

  test('ReDoS: ^(a+)+$ as filter over fifty a and a ! returns', () => {
    const p = compilePolicy(
      {
        policy: { strategy: 'alphabetical', order: 'asc' },
        filterTags: { pattern: '^(a+)+$', extract: '$1' },
      },
      [],
    );
    const sel = p.select([`${'a'.repeat(50)}!`, 'aaa']);
    assert.equal(sel.tag, 'aaa');
    assert.equal(sel.filteredOut, 1);
  });
});

describe('compare and key (for the guard and explain)', () => {
  const p = compilePolicy(
    semver('>=2.0.0', { pattern: '^v?(?P<v>[0-9.]+(-rc\\.[0-9]+)?)$', extract: '$v' }),
    SIG,
  );

  test('newer, older, equally new', () => {
    assert.equal(p.compare('2.1.0', '2.0.0'), 1);
    assert.equal(p.compare('2.0.0', '2.1.0'), -1);
    assert.equal(p.compare('1.0.0', 'v1.0.0'), 0);
    assert.equal(p.compare('2.0.0-rc.1', '2.0.0'), -1);
  });

  test('order applies outside the range; the exclusion list does not make a value unorderable', () => {
    assert.equal(p.compare('1.5.0', '1.4.0'), 1);
    assert.equal(compilePolicy(semver('1.x'), ['^1\\.5']).compare('1.5.0', '1.4.0'), 1);
  });

  test('null when either side fails the filter or does not parse', () => {
    assert.equal(p.compare('latest', '2.0.0'), null);
    assert.equal(p.compare('2.0.0', '1.2'), null);
    assert.equal(p.key('latest'), null);
  });

  test('keys read as people would', () => {
    assert.equal(p.key('v2.1.0'), 'semver 2.1.0');
    assert.equal(p.key('2.1.0-rc.1'), 'semver 2.1.0-rc.1');
    const n = compilePolicy({ policy: { strategy: 'numerical', order: 'asc' } }, []);
    assert.equal(n.key('1655866680'), 'numerical 1655866680');
    assert.equal(n.key('x'), null);
    assert.equal(n.compare('1', '1.0'), 0);
  });

  test('numerical desc: a smaller number is newer', () => {
    const n = compilePolicy({ policy: { strategy: 'numerical', order: 'desc' } }, []);
    assert.equal(n.compare('1', '2'), 1);
  });
});

describe('newestBuild', () => {
  const times = new Map([
    ['a', new Date('2024-01-01T00:00:00Z')],
    ['b', new Date('2024-03-01T00:00:00Z')],
    ['c', new Date('2024-02-01T00:00:00Z')],
  ]);
  const p = compilePolicy({ policy: { strategy: 'newestBuild' } }, SIG);

  test('orders by build time; tags without one are not candidates', () => {
    const sel = p.select(['a', 'b', 'c', 'd'], { buildTimes: times });
    assert.equal(sel.tag, 'b');
    assert.deepEqual(
      sel.candidates.map((c) => c.tag),
      ['b', 'c', 'a'],
    );
    assert.equal(sel.unparsable, 1);
    assert.equal(sel.candidates[0]?.key, 'built 2024-03-01T00:00:00.000Z');
  });

  test('no build times at all: no tag, and says so', () => {
    const sel = p.select(['a', 'b']);
    assert.equal(sel.tag, null);
    assert.match(sel.error ?? '', /no build time is known for 2 tags/);
  });

  test('compare uses build times; null when one is missing', () => {
    assert.equal(p.compare('b', 'a', { buildTimes: times }), 1);
    assert.equal(p.compare('a', 'c', { buildTimes: times }), -1);
    assert.equal(p.compare('a', 'd', { buildTimes: times }), null);
    assert.equal(p.key('a', { buildTimes: times }), 'built 2024-01-01T00:00:00.000Z');
  });
});

describe("selection agrees with Flux's policers fed in Flux's stored order", () => {
  // Flux stores a repository's tags sorted by byte order, newest string first, and its
  // policers read them in that order; with no filter, pawl must pick what they pick.
  const fluxOrder = (tags: string[]): string[] =>
    [...new Set(tags)].sort((a, b) => (a < b ? 1 : a > b ? -1 : 0));

  test('semver, numerical, alphabetical over generated tags', async () => {
    const fc = await import('fast-check');
    const { semverLatest, parseSemverRange, numericalLatest, alphabeticalLatest } =
      await import('../../src/select/index.js');
    const part = fc.constantFrom('0', '1', '2', '01', '10');
    const semverTag = fc
      .tuple(
        fc.constantFrom('', 'v'),
        part,
        part,
        part,
        fc.constantFrom('', '-rc.1', '-rc.2', '-alpha', '-0'),
        fc.constantFrom('', '+b1', '+b2'),
      )
      .map(([v, a, b, c, pre, meta]) => `${v}${a}.${b}.${c}${pre}${meta}`);
    const anyTag = fc.oneof(
      semverTag,
      fc.constantFrom('latest', '1.2', 'main', '1e3', '10', '1.0', '01', '-5', '0x10p0'),
    );
    const ranges = ['*', '>=1.0.0', '>=0.0.0-0', '1.x', '~1.2', '^0.1', '<2 || >=10', '>=1.0.0-0 <2'];
    fc.assert(
      fc.property(
        fc.array(anyTag, { maxLength: 12 }),
        fc.constantFrom(...ranges),
        fc.constantFrom('asc' as const, 'desc' as const),
        (tags, range, order) => {
          const flux = fluxOrder(tags);
          const s = semverLatest(parseSemverRange(range), flux);
          assert.equal(
            compilePolicy(semver(range), []).select(tags).tag,
            'latest' in s ? s.latest : null,
            `semver ${range} ${JSON.stringify(flux)}`,
          );
          const n = numericalLatest(order, flux);
          const nSel = compilePolicy({ policy: { strategy: 'numerical', order } }, []).select(tags);
          if (!flux.some((t) => t.toLowerCase() === 'nan'))
            assert.equal(
              nSel.tag,
              'latest' in n ? n.latest : null,
              `numerical ${order} ${JSON.stringify(flux)}`,
            );
          const a = alphabeticalLatest(order, flux);
          assert.equal(
            compilePolicy({ policy: { strategy: 'alphabetical', order } }, []).select(tags).tag,
            'latest' in a ? a.latest : null,
          );
        },
      ),
      { numRuns: 400 },
    );
  });
});
