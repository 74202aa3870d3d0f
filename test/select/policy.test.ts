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

/**
 * An oracle written apart from src/select: Flux's three policers restated over the small tag
 * grammar generated below (SemVer 2.0 precedence, Masterminds' prerelease rule, Go's
 * strconv.ParseFloat on the few non-semver tags), fed in Flux's stored order (byte order, newest
 * string first). It shares no code with pawl, so a tie-break or range bug in pawl shows as a
 * disagreement, at a fixed seed (fast-check prints it with the counterexample).
 */
const FluxOracle = (() => {
  interface V {
    nums: [number, number, number];
    pre: string[];
  }
  /** `[v]MAJOR.MINOR.PATCH[-PRE][+META]`, leading zeros allowed in the numbers (Masterminds NewVersion). */
  function parse(tag: string): V | null {
    const m = /^v?([0-9]+)\.([0-9]+)\.([0-9]+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/.exec(tag);
    if (!m) return null;
    const pre = m[4] === undefined ? [] : m[4].split('.');
    if (pre.some((id) => id === '' || (/^[0-9]+$/.test(id) && id.length > 1 && id.startsWith('0'))))
      return null;
    return { nums: [Number(m[1]), Number(m[2]), Number(m[3])], pre };
  }
  function compare(a: V, b: V): number {
    for (let i = 0; i < 3; i++) if (a.nums[i] !== b.nums[i]) return a.nums[i]! < b.nums[i]! ? -1 : 1;
    if (a.pre.length === 0 || b.pre.length === 0)
      return b.pre.length - a.pre.length === 0 ? 0 : a.pre.length === 0 ? 1 : -1;
    for (let i = 0; i < Math.min(a.pre.length, b.pre.length); i++) {
      const x = a.pre[i]!;
      const y = b.pre[i]!;
      if (x === y) continue;
      const xn = /^[0-9]+$/.test(x);
      const yn = /^[0-9]+$/.test(y);
      if (xn && yn) return Number(x) < Number(y) ? -1 : 1;
      if (xn !== yn) return xn ? -1 : 1;
      return x < y ? -1 : 1;
    }
    return a.pre.length === b.pre.length ? 0 : a.pre.length < b.pre.length ? -1 : 1;
  }
  const v = (s: string): V => parse(s)!;
  const ge = (x: V, s: string) => compare(x, v(s)) >= 0;
  const lt = (x: V, s: string) => compare(x, v(s)) < 0;
  const release = (x: V) => x.pre.length === 0;
  /** Each range as Masterminds reads it; a prerelease passes only a group that names one. */
  const RANGES: Record<string, (x: V) => boolean> = {
    '*': (x) => release(x),
    '>=1.0.0': (x) => release(x) && ge(x, '1.0.0'),
    '>=0.0.0-0': (x) => ge(x, '0.0.0-0'),
    '1.x': (x) => release(x) && x.nums[0] === 1,
    '~1.2': (x) => release(x) && ge(x, '1.2.0') && lt(x, '1.3.0'),
    '^0.1': (x) => release(x) && ge(x, '0.1.0') && lt(x, '0.2.0'),
    '<2 || >=10': (x) => release(x) && (lt(x, '2.0.0') || ge(x, '10.0.0')),
    '>=1.0.0-0 <2': (x) => ge(x, '1.0.0-0') && lt(x, '2.0.0'),
    '<=1.x': (x) => release(x) && x.nums[0] <= 1,
  };
  /** Flux's SemVer.Latest: the first strictly greater version in stored order wins. */
  function semver(range: string, stored: string[]): string | null {
    let best: { tag: string; v: V } | null = null;
    for (const tag of stored) {
      const x = parse(tag);
      if (x && RANGES[range]!(x) && (best === null || compare(x, best.v) > 0)) best = { tag, v: x };
    }
    return best?.tag ?? null;
  }
  /** Go's strconv.ParseFloat on the tags the generator makes; null where it fails. */
  const FLOATS: Record<string, number> = {
    '1.2': 1.2,
    '1e3': 1000,
    '10': 10,
    '1.0': 1,
    '01': 1,
    '-5': -5,
    '0x10p0': 16,
  };
  /** Flux's Numerical.Latest: any tag that is not a number fails the policy; ties go to the last one read. */
  function numerical(order: 'asc' | 'desc', stored: string[]): string | null {
    let latest: string | null = null;
    let pv = 0;
    for (const [i, tag] of stored.entries()) {
      const cv = FLOATS[tag];
      if (cv === undefined) return null;
      if (i > 0 && ((order === 'asc' && cv < pv) || (order === 'desc' && cv > pv))) continue;
      latest = tag;
      pv = cv;
    }
    return latest;
  }
  function alphabetical(order: 'asc' | 'desc', stored: string[]): string | null {
    if (stored.length === 0) return null;
    const sorted = [...stored].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return order === 'asc' ? sorted.at(-1)! : sorted[0]!;
  }
  return { parse, compare, RANGES, semver, numerical, alphabetical };
})();

describe("selection agrees with an independent oracle of Flux's policers (fixed seed)", () => {
  const fluxOrder = (tags: string[]): string[] =>
    [...new Set(tags)].sort((a, b) => (a < b ? 1 : a > b ? -1 : 0));
  const SEED = 20261130;

  test('the oracle itself, on hand-checked cases', () => {
    assert.equal(FluxOracle.semver('*', fluxOrder(['1.0.0', 'v1.0.0', '01.0.0', '1.0.0+b1'])), 'v1.0.0');
    assert.equal(
      FluxOracle.semver('>=0.0.0-0', fluxOrder(['1.0.0-rc.1', '1.0.0-alpha', '0.9.0'])),
      '1.0.0-rc.1',
    );
    assert.equal(FluxOracle.semver('<=1.x', fluxOrder(['1.9.0', '2.0.0', '0.1.0'])), '1.9.0');
    assert.equal(FluxOracle.numerical('asc', fluxOrder(['01', '1.0', '-5'])), '01');
    assert.equal(FluxOracle.numerical('asc', fluxOrder(['10', 'latest'])), null);
  });

  test('semver, numerical, alphabetical over generated tags', async () => {
    const fc = await import('fast-check');
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
    const numberTag = fc.constantFrom('1.2', '1e3', '10', '1.0', '01', '-5', '0x10p0');
    const anyTag = fc.oneof(semverTag, numberTag, fc.constantFrom('latest', 'main'));
    // Equal versions spelled differently (`v` prefix, build metadata, leading zeros) are where the
    // tie-break shows: copy some tags respelled.
    const respell = (t: string, k: number): string => {
      const bare = t.startsWith('v') ? t.slice(1) : t;
      const spellings = [bare, `v${bare}`, `${bare.replace(/\+.*$/, '')}+z${k}`, bare.replace(/^1\./, '01.')];
      return spellings[k % spellings.length]!;
    };
    const withTies = fc
      .array(anyTag, { maxLength: 12 })
      .chain((tags) =>
        fc
          .subarray(tags.map((t, i) => [t, i] as const))
          .map((copies) => [...tags, ...copies.map(([t, i]) => respell(t, i))]),
      );
    fc.assert(
      fc.property(
        withTies,
        fc.array(numberTag, { maxLength: 8 }),
        fc.constantFrom(...Object.keys(FluxOracle.RANGES)),
        fc.constantFrom('asc' as const, 'desc' as const),
        (tags, numbers, range, order) => {
          assert.equal(
            compilePolicy(semver(range), []).select(tags).tag,
            FluxOracle.semver(range, fluxOrder(tags)),
            `semver ${range} ${JSON.stringify(fluxOrder(tags))}`,
          );
          for (const list of [tags, numbers]) {
            assert.equal(
              compilePolicy({ policy: { strategy: 'numerical', order } }, []).select(list).tag,
              FluxOracle.numerical(order, fluxOrder(list)),
              `numerical ${order} ${JSON.stringify(fluxOrder(list))}`,
            );
          }
          assert.equal(
            compilePolicy({ policy: { strategy: 'alphabetical', order } }, []).select(tags).tag,
            FluxOracle.alphabetical(order, fluxOrder(tags)),
            `alphabetical ${order} ${JSON.stringify(fluxOrder(tags))}`,
          );
        },
      ),
      { numRuns: 1500, seed: SEED },
    );
  });
});
