import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { compileRegex, literalAffixes } from '../../src/go/regexp.js';

describe('compileRegex: Go/RE2 syntax', () => {
  test('accepts Go syntax', () => {
    assert.equal(compileRegex('(?P<num>\\d+)').expand('$num', 'rc-12'), '12');
    assert.equal(compileRegex('(?<num>\\d+)').expand('${num}', 'rc-12'), '12');
    assert.equal(compileRegex('(?i)^RELEASE').test('release-1'), true);
    assert.equal(compileRegex('\\pL+').test('abc'), true);
    assert.equal(compileRegex('[[:digit:]]').test('x1'), true);
  });

  test('rejects what Go rejects, naming the pattern and the reason', () => {
    assert.throws(() => compileRegex('('), { message: 'invalid regular expression "(": missing closing )' });
    assert.throws(() => compileRegex('[='), {
      message: 'invalid regular expression "[=": missing closing ]',
    });
    assert.throws(() => compileRegex('(?<=a)b'), /invalid regular expression "\(\?<=a\)b"/);
    assert.throws(() => compileRegex('(a)\\1'), /invalid escape sequence/);
    assert.throws(() => compileRegex('a{1001}'), /invalid repeat count/);
  });

  test('test() is an unanchored search, like MatchString', () => {
    const re = compileRegex('ver');
    assert.equal(re.test('a-ver-b'), true);
    assert.equal(re.test('v-e-r'), false);
  });

  test("Go's character semantics: runes, simple case folding, ASCII \\s \\w \\b", () => {
    assert.equal(compileRegex('(?i)k').test('\u212A'), true); // KELVIN SIGN folds to k
    assert.equal(compileRegex('(?i)s').test('\u017F'), true); // LONG S folds to s
    assert.equal(compileRegex('.').test('\r'), true);
    assert.equal(compileRegex('.').test('\n'), false);
    assert.equal(compileRegex('^.$').test('\u{1F600}'), true); // one rune, two UTF-16 units
    assert.equal(compileRegex('\\w').test('é'), false);
    assert.equal(compileRegex('\\s').test('\v'), false);
  });

  test('$ is the end of the text, not before a final newline', () => {
    assert.equal(compileRegex('a$').test('a\n'), false);
    assert.equal(compileRegex('(?m)a$').test('a\n'), true);
  });

  test('^(a+)+$ over fifty a and a ! returns (linear time)', () => {
    assert.equal(compileRegex('^(a+)+$').test(`${'a'.repeat(50)}!`), false);
    assert.equal(compileRegex('^(a+)+$').expand('$1', `${'a'.repeat(50)}!`), null);
    assert.equal(compileRegex('(x+x+)+y').test('x'.repeat(5000)), false);
  });
});

describe('expand: Go Regexp.Expand', () => {
  const re = compileRegex('(?P<name>[a-z]+)-(?P<num>[0-9]+)(?P<opt>-x)?');
  const cases: [string, string][] = [
    ['$1', 'abc'],
    ['$2', '42'],
    ['${1}', 'abc'],
    ['$name', 'abc'],
    ['${name}', 'abc'],
    ['$name-$num', 'abc-42'],
    ['$$', '$'],
    ['$$name', '$name'],
    ['$1x', ''], // `$1x` names a group "1x": longest run of letters, digits, _
    ['${1}x', 'abcx'],
    ['$name_x', ''],
    ['$nope', ''],
    ['$9', ''],
    ['$01', ''], // leading zero: a name, not a number
    ['$0', 'abc-42'],
    ['$opt', ''], // group did not take part
    ['$', '$'],
    ['$!', '$!'],
    ['${name', '${name'], // missing brace: $ kept as text
    ['${}', '${}'],
    ['pre-${num}-post', 'pre-42-post'],
    ['', ''],
  ];
  for (const [template, want] of cases) {
    test(`${JSON.stringify(template)} → ${JSON.stringify(want)}`, () => {
      assert.equal(re.expand(template, 'xx abc-42 yy'), want);
    });
  }

  test('returns null when there is no match', () => {
    assert.equal(re.expand('$1', 'ABC'), null);
  });

  test('Unicode letters extend a name in the template (group names themselves are ASCII, as in Go)', () => {
    assert.throws(() => compileRegex('(?P<é>a)'), /invalid named capture/);
    assert.equal(compileRegex('(a)').expand('$1é', 'a'), '');
    assert.equal(compileRegex('(a)').expand('${1}é', 'a'), 'aé');
  });

  test('leftmost-first submatches, as Go', () => {
    assert.equal(compileRegex('(a|ab)(c|bcd)(d*)').expand('$1,$2,$3', 'abcd'), 'a,bcd,');
    assert.equal(compileRegex('(a*?)(a*)').expand('$1|$2', 'aaa'), '|aaa');
  });
});

describe('literal prefilter never changes a result', () => {
  test('affixes are found only where every match must have them', () => {
    assert.deepEqual(literalAffixes('^release-(?P<v>.*)$'), { prefix: 'release-', suffix: '' });
    assert.deepEqual(literalAffixes('^.*\\.sig$'), { prefix: '', suffix: '.sig' });
    assert.deepEqual(literalAffixes('^ab*c'), { prefix: 'a', suffix: '' });
    assert.deepEqual(literalAffixes('^a|b'), { prefix: '', suffix: '' });
    assert.deepEqual(literalAffixes('(?i)^abc$'), { prefix: '', suffix: '' });
    assert.deepEqual(literalAffixes('^a\\$'), { prefix: 'a$', suffix: '' });
    assert.deepEqual(literalAffixes('x\\\\$'), { prefix: '', suffix: 'x\\' });
    assert.deepEqual(literalAffixes('[a$]$'), { prefix: '', suffix: '' });
  });

  test('patterns with affixes agree with an unfiltered engine on many inputs', async () => {
    const { RE2JS } = await import('re2js');
    const patterns = [
      '^release-(?P<v>.*)$',
      '^.*\\.sig$',
      '^v\\d+\\.\\d+$',
      '^a\\.b',
      'x-\\w+-y$',
      '^ab?c',
      '^main-[a-f0-9]+-(?P<ts>[0-9]+)$',
    ];
    const inputs = [
      'release-1',
      'release-',
      'Release-1',
      'a.sig',
      '.sig',
      'x.sig\n',
      'v1.2',
      'v1.2.3',
      'a.bc',
      'axb',
      'x-ab-y',
      'x-a-b-y',
      'ac',
      'abc',
      'main-ff-12',
      'main--12',
      '',
    ];
    for (const p of patterns) {
      const plain = RE2JS.compile(p);
      const ours = compileRegex(p);
      for (const s of inputs) assert.equal(ours.test(s), plain.test(s), `${p} on ${JSON.stringify(s)}`);
    }
  });
});

describe('compiled templates agree with the step-by-step expansion', () => {
  test('over generated templates and inputs', async () => {
    const fc = await import('fast-check');
    const { expandTemplate } = await import('../../src/go/regexp.js');
    const names = ['', 'name', '', 'x_1'];
    const re = compileRegex('(?P<name>[a-z]*)(\\d)?(?P<x_1>-+)?');
    const piece = fc.constantFrom(
      '$',
      '$$',
      '${',
      '}',
      '1',
      '0',
      '2',
      '3',
      'name',
      'x_1',
      'x',
      '_',
      '-',
      'é',
      '{name}',
      ' ',
    );
    fc.assert(
      fc.property(
        fc.array(piece, { maxLength: 8 }),
        fc.stringMatching(/^[a-z0-9-]{0,8}$/),
        (parts, input) => {
          const template = parts.join('');
          const match = re.submatchIndex(input);
          if (match === null) return;
          assert.equal(re.expand(template, input), expandTemplate(template, input, match, names));
        },
      ),
      { numRuns: 500, seed: 91 },
    );
  });
});
