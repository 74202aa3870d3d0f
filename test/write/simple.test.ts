/**
 * The fast reader for plain documents (src/write/setters/simple.ts) must agree with the `yaml`
 * Document API on every document it accepts: same markers (range, value, style, flow), and no
 * accepted document the library would reject. Documents are generated line by line from
 * fragments near the edge of the subset (odd indentation, duplicate and non-string keys,
 * nested keys in values, flow collections, quotes, escapes, anchors, comments, CRLF, `---`).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { findMarkers, findMarkersByLibrary } from '../../src/write/setters/markers.js';
import { readSimple, type SimpleStyle } from '../../src/write/setters/simple.js';

const MARK = ' # {"$imagepolicy": "ns:p"}';

const keys = [
  'a',
  'b',
  'image',
  'app.kubernetes.io/name',
  'x-y',
  '_z',
  'k8',
  '"q"',
  "'k'",
  '"a"',
  "'it''s'",
  'true',
  'null',
  'True',
  '1',
  'a b',
  '-a',
  '? a',
  '"e\\n"',
  'a ',
];
const values = [
  'nginx:1.25',
  'ghcr.io/org/app:v1.2.3',
  'v1',
  '1.10',
  '-1',
  '-x',
  '- x',
  '-',
  'a: b',
  'x:',
  'a:b',
  'b]',
  'x,y',
  'x#y',
  "it's",
  '~',
  'null',
  'plain text',
  'tail  ',
  '"dq"',
  '"d\'q"',
  '""',
  "'s''q'",
  "''",
  '"esc\\n"',
  '"open',
  "'open",
  '"dq"x',
  '"dq": x',
  '[a, b]',
  '[]',
  '{}',
  '[ a ,b ]',
  '{a: 1, b: "2"}',
  '{\'a\': x, "b": [1, {c: d}]}',
  '[a,]',
  '[a b]',
  '[a: b]',
  '{a: 1, a: 2}',
  '{a:1}',
  '{a}',
  '[-1, -x, "q"]',
  '[',
  '{a: [1, 2',
  '|',
  '>-',
  '&a x',
  '*a',
  '!t x',
  '%x',
  '@x',
  '`x',
  '?x',
  ':x',
  ',x',
  'é ü',
  'a\\b',
  '-:x',
  '-?',
  '--',
  '-"',
  '-[',
  '{a: -1, b: [--x, -y]}',
  '[a, [b, {c: "d"}], \'e\']',
  '',
];
const comments = ['', '', MARK, MARK, MARK, ' # {"$imagepolicy": "ns:p:tag"}', ' # c', '# c', '  #'];
const specials = [
  '',
  '   ',
  '# c',
  '  # {"$imagepolicy": "ns:p"}',
  '---',
  '--- # c',
  '--- x',
  '...',
  '%YAML 1.2',
  '\t a: b',
  '-',
  '- # {"$imagepolicy": "ns:p"}',
];

const goodKeys = ['a', 'b', 'c', 'image', 'name', 'app.kubernetes.io/name', 'x-y', '_z', 'k8', '"q"', "'k'"];
const goodValues = [
  'nginx:1.25',
  'ghcr.io/org/app:v1.2.3',
  'v1',
  '1.10',
  '-1',
  '--port',
  '---',
  'x,y',
  'b]',
  'x#y',
  "it's",
  '~',
  'plain text',
  '"dq"',
  '"d\'q"',
  "'s''q'",
  '""',
  '[a, b]',
  '[]',
  '{}',
  '{a: 1, b: "2"}',
  '{\'a\': x, "b": [1, {c: d}]}',
  '[-1, -x, "q"]',
  'é ü',
  'a\\b',
];

/** Small deterministic PRNG (mulberry32): the seed comes from fast-check, the document from this. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A multi-document file of nested maps and sequences, then perhaps one line broken or added. */
function generate(seed: number): string {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const lines: string[] = [];
  const value = (): string => pick(r() < 0.85 ? goodValues : values);
  const key = (): string => pick(r() < 0.9 ? goodKeys : keys);
  const step = (): number => pick([1, 2, 2, 2, 3, 4]);
  const extra = (): void => {
    if (r() < 0.08) lines.push(pick(specials));
  };
  const map = (indent: number, first: string | null, depth: number): void => {
    const n = 1 + Math.floor(r() * 4);
    for (let i = 0; i < n; i++) {
      const pre = i === 0 && first !== null ? first : ' '.repeat(indent);
      const kind = depth < 3 ? r() : 0;
      if (kind < 0.6) {
        const v = value();
        lines.push(`${pre}${key()}:${v === '' ? '' : ' ' + v}${pick(comments)}`);
      } else if (kind < 0.75) {
        lines.push(`${pre}${key()}:${pick(['', ' # c', MARK])}`);
        map(indent + step(), null, depth + 1);
      } else if (kind < 0.9) {
        lines.push(`${pre}${key()}:`);
        seq(r() < 0.5 ? indent : indent + step(), depth + 1);
      } else {
        lines.push(`${pre}${key()}:${pick(['', MARK])}`);
      }
      extra();
    }
  };
  const seq = (indent: number, depth: number): void => {
    const n = 1 + Math.floor(r() * 3);
    for (let i = 0; i < n; i++) {
      const kind = depth < 3 ? r() : 0;
      const dash = ' '.repeat(indent) + '-' + ' '.repeat(pick([1, 1, 1, 3]));
      if (kind < 0.5) lines.push(`${dash}${value()}${pick(comments)}`);
      else if (kind < 0.85) map(dash.length, dash, depth + 1);
      else {
        lines.push(`${' '.repeat(indent)}-${pick(['', ' # c', MARK])}`);
        if (r() < 0.5) map(indent + step(), null, depth + 1);
        else seq(indent + step(), depth + 1);
      }
      extra();
    }
  };
  const docs = 1 + Math.floor(r() * 2);
  for (let d = 0; d < docs; d++) {
    if (d > 0 || r() < 0.3) lines.push(pick(['---', '---', '--- # c']));
    if (r() < 0.2) lines.push('# head');
    if (r() < 0.8) map(r() < 0.9 ? 0 : 2, null, 0);
    else seq(0, 0);
  }
  if (r() < 0.4) {
    const at = Math.floor(r() * lines.length);
    const line = lines[at]!;
    switch (pick(['indent', 'dedent', 'insert', 'duplicate', 'delete'])) {
      case 'indent':
        lines[at] = ' '.repeat(1 + Math.floor(r() * 2)) + line;
        break;
      case 'dedent':
        lines[at] = line.replace(/^ {1,2}/, '');
        break;
      case 'insert':
        lines.splice(at, 0, pick(specials));
        break;
      case 'duplicate':
        lines.splice(at, 0, line);
        break;
      case 'delete':
        lines.splice(at, 1);
        break;
    }
  }
  const eol = r() < 0.2 ? '\r\n' : '\n';
  return lines.join(eol) + (r() < 0.9 ? eol : '');
}

const docArb = fc.integer().map(generate);

describe('simple reader', () => {
  test('agrees with the yaml library on every document it accepts', () => {
    let accepted = 0;
    let chunks = 0;
    fc.assert(
      fc.property(docArb, (text) => {
        for (const chunk of text.split(/^(?=---)/m)) {
          chunks++;
          if (readSimple(chunk, () => undefined)) accepted++;
        }
        assert.deepEqual(findMarkers(text, 'f.yaml'), findMarkersByLibrary(text, 'f.yaml'));
      }),
      { numRuns: 4000, seed: 7 },
    );
    // The comparison means little if the reader gives up on everything.
    assert.ok(accepted > chunks / 4, `only ${accepted} of ${chunks} documents accepted`);
  });

  test('agrees on a second fixed seed too', () => {
    fc.assert(
      fc.property(docArb, (text) => {
        assert.deepEqual(findMarkers(text, 'f.yaml'), findMarkersByLibrary(text, 'f.yaml'));
      }),
      { numRuns: 2000, seed: 20261130 },
    );
  });

  test('linear work: the characters its searches examine stay within a small multiple of the document', () => {
    // Work counted, not time: every String search the reader makes is measured by how far it
    // looked. A search per quoted scalar that runs to the end of the file (the quadratic bug)
    // examines about lines × size characters.
    const lines = ['data:'];
    for (let i = 0; i < 4000; i++)
      lines.push(i % 2 === 0 ? `  k${i}: "double quoted ${i}"` : `  k${i}: 'single ''quoted'' ${i}'`);
    lines.push(`  image: app:1.0.0${MARK}`);
    const text = lines.join('\n') + '\n';
    const proto = String.prototype;
    const indexOf = proto.indexOf;
    let examined = 0;
    proto.indexOf = function (this: string, search: string, from?: number): number {
      const start = from ?? 0;
      const r = indexOf.call(this, search, from);
      examined += (r < 0 ? this.length : r) - start;
      return r;
    };
    let values = 0;
    let ok: boolean;
    try {
      ok = readSimple(text, () => values++);
    } finally {
      proto.indexOf = indexOf;
    }
    assert.equal(ok, true);
    assert.equal(values, 4001);
    assert.ok(
      examined <= 2 * text.length,
      `${examined} characters examined for a ${text.length}-character document`,
    );
  });

  test('quoted scalars end on their own line: a quote on a later line does not close them', () => {
    assert.equal(
      readSimple('a: "open\nb: "x"\n', () => undefined),
      false,
    );
    assert.equal(
      readSimple("a: 'open\nb: 'x'\n", () => undefined),
      false,
    );
    const seen: string[] = [];
    const t = `a: 'it''s'\nb: "x" # c\nc: ''''${MARK}\n`;
    assert.equal(
      readSimple(t, (s, e) => seen.push(t.slice(s, e))),
      true,
    );
    assert.deepEqual(seen, ["'it''s'", '"x"', "''''"]);
    assert.equal(
      readSimple('a: "x\\"y"\n', () => undefined),
      false,
      'escapes are left to the library',
    );
  });

  test('reads plain Kubernetes manifests itself, reporting value scalars only', () => {
    const text = [
      '---',
      'apiVersion: apps/v1',
      'kind: Deployment',
      'metadata:',
      '  name: app # the name',
      '  labels: {app.kubernetes.io/name: app, tier: "web"}',
      'spec:',
      '  template:',
      '    spec:',
      '      containers:',
      '      - name: app',
      '        image: "ghcr.io/org/app:1.0"' + MARK,
      "        args: [--port, '8080']",
      '',
      '      # between entries',
      '      - name: side',
      '        image: side:2' + MARK,
      '',
    ].join('\r\n');
    const seen: [string, SimpleStyle, boolean][] = [];
    assert.equal(
      readSimple(text, (s, e, style, inFlow) => seen.push([text.slice(s, e), style, inFlow])),
      true,
    );
    assert.deepEqual(seen, [
      ['apps/v1', 'plain', false],
      ['Deployment', 'plain', false],
      ['app', 'plain', false],
      ['app', 'plain', true],
      ['"web"', 'double', true],
      ['app', 'plain', false],
      ['"ghcr.io/org/app:1.0"', 'double', false],
      ['--port', 'plain', true],
      ["'8080'", 'single', true],
      ['side', 'plain', false],
      ['side:2', 'plain', false],
    ]);
  });

  test('gives up on what it does not read, so the library reports it', () => {
    for (const text of [
      'a: 1\na: 2\n', // duplicate key
      'a: b: c\n', // nested key in a value
      'a:\n  - x\n - y\n', // indentation
      'a: &x 1\nb: *x\n', // anchors
      'a: |\n  text\n', // block scalar
      'a: "x\\ty"\n', // escape
      'a: [1,\n  2]\n', // multi-line flow
      'a: plain\n  continued\n', // multi-line plain
      '\ufeffa: 1\n', // BOM
      'a:\tb\n', // tab
      'true: 1\n', // non-string key
      Array.from({ length: 100 }, (_, i) => ' '.repeat(i) + 'k:').join('\n') + ' x\n', // nesting
      'a: ' + '['.repeat(100) + ']'.repeat(100) + '\n',
    ]) {
      assert.equal(
        readSimple(text, () => undefined),
        false,
        JSON.stringify(text),
      );
    }
  });

  test('refuses a duplicate key in a short map and in a long one, block and flow', () => {
    const keys = (n: number): string[] => Array.from({ length: n }, (_, i) => `k${i}`);
    for (const n of [3, 16, 17, 40]) {
      const block = keys(n).map((k) => `${k}: v`);
      const flow = keys(n).map((k) => `${k}: v`);
      assert.equal(
        readSimple(block.join('\n') + '\n', () => undefined),
        true,
        `block of ${n}`,
      );
      assert.equal(
        readSimple(`m: {${flow.join(', ')}}\n`, () => undefined),
        true,
        `flow of ${n}`,
      );
      // The last key repeats the first, past the point where a long map's keys move to a set.
      assert.equal(
        readSimple([...block, 'k0: w'].join('\n') + '\n', () => undefined),
        false,
        `block of ${n}`,
      );
      assert.equal(
        readSimple(`m: {${[...flow, 'k0: w'].join(', ')}}\n`, () => undefined),
        false,
        `flow of ${n}`,
      );
      // Quoted and plain spellings of one key are one key.
      assert.equal(
        readSimple([...block, '"k1": w'].join('\n') + '\n', () => undefined),
        false,
        `"k1" of ${n}`,
      );
    }
  });

  test('a broken marked document is still reported with the library’s words', () => {
    const text = 'a: x' + MARK + '\nb: [1, 2\n';
    const r = findMarkers(text, 'f.yaml');
    assert.deepEqual(r.markers, []);
    assert.match(r.error ?? '', /^line \d+: /);
    assert.deepEqual(r, findMarkersByLibrary(text, 'f.yaml'));
  });
});
