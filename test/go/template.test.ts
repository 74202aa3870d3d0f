/**
 * Go text/template semantics: each expectation is what Go 1.22's text/template
 * (with sprig v3 functions) prints for the same template and data.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GoMap, GoStruct, parseTemplate, TemplateError } from '../../src/go/index.js';

function render(text: string, data: unknown = {}): string {
  return parseTemplate(text, 'msg').execute(data);
}

function parseError(text: string): string {
  try {
    parseTemplate(text, 'msg');
  } catch (e) {
    assert.ok(e instanceof TemplateError);
    return e.message;
  }
  assert.fail(`expected a parse error for ${JSON.stringify(text)}`);
}

function execError(text: string, data: unknown = {}): string {
  const t = parseTemplate(text, 'msg');
  try {
    t.execute(data);
  } catch (e) {
    assert.ok(e instanceof TemplateError);
    return e.message;
  }
  assert.fail(`expected an execution error for ${JSON.stringify(text)}`);
}

describe('text and trimming', () => {
  test('plain text passes through', () => {
    assert.equal(render('no actions\n'), 'no actions\n');
  });

  test('{{- and -}} trim spaces, tabs and newlines on their side only', () => {
    assert.equal(render('a \n\t{{- "b" -}} \n c'), 'abc');
    assert.equal(render('a  {{- "b" }}  c'), 'ab  c');
    assert.equal(render('a  {{ "b" -}}  c'), 'a  bc');
  });

  test('a minus without a space is a number, not a trim marker', () => {
    assert.equal(render('a {{-3}} b'), 'a -3 b');
  });

  test('comments print nothing and may trim', () => {
    assert.equal(render('a {{/* note */}} b'), 'a  b');
    assert.equal(render('a {{- /* note */ -}} b'), 'ab');
  });
});

describe('data access', () => {
  const data = new GoStruct('main.Data', [
    { name: 'Name', value: 'podinfo' },
    { name: 'Inner', value: new GoStruct('main.Inner', [{ name: 'Tag', value: '1.0' }]) },
    {
      name: 'Tags',
      value: new GoMap(
        'map[string]string',
        new Map([
          ['b', '2'],
          ['a', '1'],
        ]),
        '',
      ),
    },
  ]);

  test('field chains, map keys, $ and parentheses', () => {
    assert.equal(
      render('{{ .Name }} {{ .Inner.Tag }} {{ .Tags.a }} {{ $.Name }} {{ (.Inner).Tag }}', data),
      'podinfo 1.0 1 podinfo 1.0',
    );
  });

  test('a missing map key prints <no value> but index gives the zero value', () => {
    assert.equal(render('[{{ .Tags.zzz }}] [{{ index .Tags "zzz" }}]', data), '[<no value>] []');
  });

  test('a field that does not exist is an error with its location', () => {
    assert.equal(
      execError('line one\n  {{ .Nope }}', data),
      'template: msg:2:5: executing "msg" at <.Nope>: can\'t evaluate field Nope in type main.Data',
    );
  });

  test('fields of nothing are nothing', () => {
    assert.equal(render('{{ .a.b.c }}', { a: undefined }), '<no value>');
  });
});

describe('variables', () => {
  test('declare, assign and scope', () => {
    assert.equal(render('{{ $x := "a" }}{{ if true }}{{ $x = "b" }}{{ $y := "c" }}{{ end }}{{ $x }}'), 'b');
    assert.equal(
      parseError('{{ if true }}{{ $y := "c" }}{{ end }}{{ $y }}'),
      'template: msg:1: undefined variable "$y"',
    );
  });

  test('range with index and element, over slices and over maps in sorted key order', () => {
    assert.equal(render('{{ range $i, $v := . }}{{ $i }}={{ $v }} {{ end }}', ['x', 'y']), '0=x 1=y ');
    assert.equal(
      render('{{ range $k, $v := . }}{{ $k }}={{ $v }} {{ end }}', { zeta: 1, alpha: 2, Beta: 3 }),
      'Beta=3 alpha=2 zeta=1 ',
    );
    assert.equal(
      render(
        '{{ range . }}[{{ . }}]{{ end }}',
        new Map([
          ['b', 2],
          ['a', 1],
        ]),
      ),
      '[1][2]',
    );
  });

  test('range else, break and continue, and range over an integer', () => {
    assert.equal(render('{{ range . }}x{{ else }}empty{{ end }}', []), 'empty');
    assert.equal(
      render(
        '{{ range . }}{{ if eq . 3 }}{{ break }}{{ end }}{{ if eq . 1 }}{{ continue }}{{ end }}{{ . }}{{ end }}',
        [0, 1, 2, 3, 4],
      ),
      '02',
    );
    assert.equal(render('{{ range 3 }}{{ . }}{{ end }}'), '012');
  });
});

describe('control structures and truth', () => {
  test("if / else if / else, with Go's notion of empty", () => {
    const t = '{{ if .A }}A{{ else if .B }}B{{ else }}none{{ end }}';
    assert.equal(render(t, { A: 0, B: 'x' }), 'B');
    assert.equal(render(t, { A: [], B: '' }), 'none');
    assert.equal(render(t, { A: new GoStruct('main.S', []), B: '' }), 'A');
  });

  test('with sets dot; with else', () => {
    assert.equal(render('{{ with .A }}<{{ . }}>{{ else }}none{{ end }}', { A: 'v' }), '<v>');
    assert.equal(render('{{ with .A }}<{{ . }}>{{ else with .B }}b={{ . }}{{ end }}', { B: 2 }), 'b=2');
  });

  test('and / or return the deciding operand and short-circuit', () => {
    assert.equal(render('{{ and 1 2 }}'), '2');
    assert.equal(render('{{ and 1 "" 3 }}|{{ or 0 "" "z" }}'), '|z');
    assert.equal(render('{{ if or true (fail "boom") }}ok{{ end }}'), 'ok');
  });

  test('comparisons', () => {
    assert.equal(
      render(
        '{{ eq 1 1 }} {{ eq "a" "b" "a" }} {{ ne 1 2 }} {{ lt 1 2 }} {{ le 2 2 }} {{ gt "b" "a" }} {{ ge 1 2 }}',
      ),
      'true true true true true true false',
    );
    assert.equal(
      execError('{{ eq 1 "1" }}'),
      'template: msg:1:3: executing "msg" at <eq 1 "1">: error calling eq: incompatible types for comparison',
    );
    assert.equal(render('{{ eq .Missing "x" }}', {}), 'false');
  });
});

describe('functions', () => {
  test('printf verbs, flags and widths', () => {
    assert.equal(
      render(
        '{{ printf "%s|%d|%v|%q|%x|%X|%t|%%|%5.1f|%e" "a" 42 1.5 "q\\"" "hi" 255 true 3.14159 1234.5 }}',
      ),
      'a|42|1.5|"q\\""|6869|FF|true|%|  3.1|1.234500e+03',
    );
    assert.equal(
      render('{{ printf "[%-6s][%6s][%06d][%+d][%.2s]" "ab" "ab" -42 5 "abcdef" }}'),
      '[ab    ][    ab][-00042][+5][ab]',
    );
  });

  test('printf reports wrong, missing and extra arguments as Go does', () => {
    assert.equal(render('{{ printf "%d %s" "x" }}'), '%!d(string=x) %!s(MISSING)');
    assert.equal(render('{{ printf "%s" "a" 1 }}'), 'a%!(EXTRA int=1)');
  });

  test('print puts spaces only between non-strings; println always', () => {
    assert.equal(render('{{ print "a" "b" 1 2 "c" }}|{{ println "a" 1 }}'), 'ab1 2c|a 1\n');
  });

  test("values print as Go's fmt prints them", () => {
    assert.equal(render('{{ . }}', ['a', 'b']), '[a b]');
    assert.equal(render('{{ . }}', { b: 1, a: [true, false] }), 'map[a:[true false] b:1]');
    assert.equal(render('{{ 1e6 }} {{ 0.000001 }} {{ 123456.5 }} {{ 1.5 }}'), '1e+06 1e-06 123456.5 1.5');
  });

  test('len, index, slice', () => {
    assert.equal(
      render('{{ len "héllo" }} {{ len . }} {{ index . 1 }} {{ slice . 1 }}', ['a', 'b', 'c']),
      '6 3 b [b c]',
    );
    assert.equal(
      execError('{{ index . 3 }}', ['a']),
      'template: msg:1:3: executing "msg" at <index . 3>: error calling index: index out of range: 3',
    );
  });

  test('html, js, urlquery', () => {
    assert.equal(render('{{ html "<a href=\'x\'>&</a>" }}'), '&lt;a href=&#39;x&#39;&gt;&amp;&lt;/a&gt;');
    assert.equal(render('{{ js "it\'s <b>" }}'), "it\\'s \\u003Cb\\u003E");
    assert.equal(render('{{ urlquery "a b&c/d" }}'), 'a+b%26c%2Fd');
  });

  test('pipelines pass the value as the last argument', () => {
    assert.equal(
      render('{{ "ghcr.io/org/app:1.2.3" | splitList ":" | last | printf "tag %s" }}'),
      'tag 1.2.3',
    );
  });
});

describe('sprig functions', () => {
  test('strings', () => {
    assert.equal(
      render(
        '{{ "Hello World" | lower }}|{{ upper "x" }}|{{ title "hello wide-world" }}|{{ trunc 5 "abcdefgh" }}|{{ trunc -3 "abcdefgh" }}|{{ trim "  x  " }}',
      ),
      'hello world|X|Hello Wide-World|abcde|fgh|x',
    );
    assert.equal(
      render(
        '{{ trimPrefix "v" "v1.2" }}|{{ trimSuffix "-rc" "1.0-rc" }}|{{ replace "." "-" "1.2.3" }}|{{ contains "b" "abc" }}|{{ hasPrefix "a" "abc" }}|{{ hasSuffix "c" "abc" }}',
      ),
      '1.2|1.0|1-2-3|true|true|true',
    );
    assert.equal(
      render('{{ quote "a" 1 }}|{{ squote "a" }}|{{ "x\\ny" | indent 2 }}|{{ "x" | nindent 2 }}'),
      '"a" "1"|\'a\'|  x\n  y|\n  x',
    );
    assert.equal(
      render(
        '{{ repeat 3 "ab" }}|{{ substr 1 3 "abcdef" }}|{{ nospace "a b\tc" }}|{{ abbrev 6 "abcdefgh" }}',
      ),
      'ababab|bc|abc|abc...',
    );
  });

  test('hashes and encodings', () => {
    assert.equal(
      render('{{ sha256sum "hello" }}'),
      '2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824',
    );
    assert.equal(
      render('{{ sha1sum "hello" }}|{{ adler32sum "hello" }}'),
      'aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d|103547413',
    );
    assert.equal(
      render('{{ b64enc "hello" }}|{{ b64dec "aGVsbG8=" }}|{{ b32enc "hi" }}'),
      'aGVsbG8=|hello|NBUQ====',
    );
  });

  test('lists', () => {
    assert.equal(render('{{ list "b" "a" "b" | uniq | sortAlpha | join "," }}'), 'a,b');
    assert.equal(
      render(
        '{{ $l := list 1 2 3 }}{{ first $l }} {{ last $l }} {{ rest $l }} {{ initial $l }} {{ reverse $l }} {{ has 2 $l }}',
      ),
      '1 3 [2 3] [1 2] [3 2 1] true',
    );
    assert.equal(
      render(
        '{{ splitList "/" "a/b/c" | join "+" }}|{{ (split "/" "a/b")._1 }}|{{ without (list 1 2 1) 1 }}|{{ compact (list "" "a") }}',
      ),
      'a+b+c|b|[2]|[a]',
    );
    assert.equal(
      execError('{{ uniq "abc" }}'),
      'template: msg:1:3: executing "msg" at <uniq "abc">: error calling uniq: Cannot find uniq on type string',
    );
  });

  test('defaults, dicts and arithmetic', () => {
    assert.equal(
      render(
        '{{ .X | default "none" }}|{{ "" | default "d" }}|{{ 0 | default 5 }}|{{ coalesce "" "b" }}|{{ ternary "y" "n" true }}',
        {},
      ),
      'none|d|5|b|y',
    );
    assert.equal(
      render(
        '{{ $d := dict "b" 2 "a" 1 }}{{ keys $d | sortAlpha }} {{ get $d "a" }} {{ hasKey $d "c" }} {{ toJson $d }}',
      ),
      '[a b] 1 false {"a":1,"b":2}',
    );
    assert.equal(
      render(
        '{{ add 1 2 3 }} {{ sub 5 2 }} {{ mul 2 3 }} {{ div 7 2 }} {{ mod 7 2 }} {{ max 1 5 3 }} {{ add1 1 }}',
      ),
      '6 3 6 3 1 5 2',
    );
  });

  test('sprig signatures decide argument conversion, as in Go', () => {
    // trunc takes an int; add returns int64: Go refuses to pass one as the other.
    assert.equal(
      execError('{{ trunc (add 1 1) "abc" }}'),
      // Go leaves the error at the last node it evaluated, the second 1.
      'template: msg:1:16: executing "msg" at <1>: wrong type for value; expected int; got int64',
    );
    assert.equal(
      execError('{{ lower 3 }}'),
      'template: msg:1:9: executing "msg" at <3>: expected string; found 3',
    );
  });

  test('decimal float arithmetic, seq, merge', () => {
    // sprig's addf & co. compute in decimal: 1.1 + 2.2 is 3.3, not 3.3000000000000003.
    assert.equal(
      render('{{ addf 1.1 2.2 }} {{ divf 1 3 }} {{ round 3.14159 2 }} {{ seq 3 }} {{ seq 5 1 }}'),
      '3.3 0.3333333333333333 3.14 1 2 3 5 4 3 2 1',
    );
    assert.equal(
      render(
        '{{ merge (dict "x" 1 "n" (dict "a" 1)) (dict "x" 2 "n" (dict "b" 2)) | toJson }} {{ mergeOverwrite (dict "x" 1) (dict "x" 2) | toJson }}',
      ),
      '{"n":{"a":1,"b":2},"x":1} {"x":2}',
    );
  });

  test('semver and semverCompare follow Masterminds/semver v3', () => {
    assert.equal(
      render(
        '{{ semver "v1.2" }}|{{ (semver "1.2.3-rc.1").Prerelease }}|{{ semverCompare "^1.2" "1.3.0" }}|{{ semverCompare ">=2" "1.3.0" }}',
      ),
      '1.2.0|rc.1|true|false',
    );
    assert.match(
      execError('{{ semverCompare ">=2" "latest" }}'),
      /error calling semverCompare: Invalid Semantic Version$/,
    );
  });

  test("regular expressions use RE2 syntax and Go's $ expansion", () => {
    assert.equal(
      render(
        '{{ regexReplaceAll "v(\\\\d+)" "v1 v22" "n${1}" }}|{{ regexFind "[0-9]+" "ab12cd34" }}|{{ regexMatch "^v" "v1" }}',
      ),
      'n1 n22|12|true',
    );
    assert.equal(
      render('{{ regexFindAll "[0-9]" "a1b2c3" -1 }}|{{ regexSplit "," "a,b,c" -1 }}'),
      '[1 2 3]|[a b c]',
    );
  });
});

describe("parse errors carry the line and Go's words", () => {
  const cases: [string, string][] = [
    ['a\nb\n{{ end }}', 'template: msg:3: unexpected {{end}}'],
    ['{{ if .X }}\nno end', 'template: msg:2: unexpected EOF'],
    ['{{ .X ', 'template: msg:1: unclosed action'],
    ['{{ nope 1 }}', 'template: msg:1: function "nope" not defined'],
    ['{{ else }}', 'template: msg:1: unexpected {{else}}'],
    ['{{ $x }}', 'template: msg:1: undefined variable "$x"'],
    ['{{ "a" | "b" }}', 'template: msg:1: non executable command in pipeline stage 2'],
    ['{{ | .X }}', 'template: msg:1: unexpected "|" in command'],
    ['{{ }}', 'template: msg:1: missing value for command'],
    ['{{ "unterminated }}', 'template: msg:1: unterminated quoted string'],
    ['{{/* open', 'template: msg:1: unclosed comment'],
    ['{{ (1 }}', 'template: msg:1: unclosed left paren'],
    ['{{ range $a, $b, $c := . }}{{ end }}', 'template: msg:1: too many declarations in range'],
    ['{{ break }}', 'template: msg:1: {{break}} outside {{range}}'],
    ['x\n{{ if true }}\n{{ else }}\n{{ else }}\n{{ end }}', 'template: msg:4: expected end; found {{else}}'],
    ['{{ 3.x }}', 'template: msg:1: bad number syntax: "3.x"'],
  ];
  for (const [text, message] of cases) {
    test(JSON.stringify(text), () => {
      assert.equal(parseError(text), message);
    });
  }

  test('the error has the line as a number too', () => {
    try {
      parseTemplate('a\n\n{{ end }}', 'msg');
      assert.fail('no error');
    } catch (e) {
      assert.ok(e instanceof TemplateError);
      assert.equal(e.line, 3);
    }
  });

  test('functions Flux does not offer (non-hermetic sprig) are undefined, as in Flux', () => {
    assert.equal(parseError('{{ now }}'), 'template: msg:1: function "now" not defined');
    assert.equal(parseError('{{ env "HOME" }}'), 'template: msg:1: function "env" not defined');
    assert.equal(parseError('{{ randAlpha 3 }}'), 'template: msg:1: function "randAlpha" not defined');
  });
});

describe('define, template and block', () => {
  test('named templates', () => {
    assert.equal(
      render('{{ define "item" }}- {{ . }}\n{{ end }}{{ range . }}{{ template "item" . }}{{ end }}', [
        'a',
        'b',
      ]),
      '- a\n- b\n',
    );
    assert.equal(render('{{ block "b" . }}[{{ . }}]{{ end }}', 'x'), '[x]');
  });
});
