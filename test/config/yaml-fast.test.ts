import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { LineCounter, parseAllDocuments } from 'yaml';
import { readFastYaml } from '../../src/config/yaml-fast.js';
import { parseDocuments } from '../../src/config/yaml-source.js';
import { ROOT, gitObjects, imageObjects } from '../helpers/world.js';

/** The yaml library's answer, as parseDocuments used to compute it for every file. */
function library(text: string) {
  const lineCounter = new LineCounter();
  const docs = parseAllDocuments(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  return {
    errors: docs.reduce((n, d) => n + d.errors.length, 0),
    docs: docs
      .filter((d) => d.contents !== null)
      .map((d) => ({ line: lineCounter.linePos(d.contents!.range[0]).line, value: d.toJS() as unknown })),
  };
}

/** Whenever the fast reader answers, it answers what the library does (values, document lines, no error missed). */
function assertSame(text: string): boolean {
  const fast = readFastYaml(text);
  if (fast === null) return false;
  const lib = library(text);
  assert.equal(lib.errors, 0, `fast reader accepted a document the library rejects:\n${text}`);
  assert.deepEqual(
    fast.map((d) => ({ line: d.line, value: d.value as unknown })),
    lib.docs,
    text,
  );
  return true;
}

test('fast YAML reader: the same values and document lines as the yaml library on every fixture it accepts', () => {
  const files = execFileSync(
    'find',
    ['test', '/work/shared/conformance', '-name', '*.yaml', '-o', '-name', '*.yml'],
    {
      cwd: ROOT,
      encoding: 'utf8',
    },
  )
    .trim()
    .split('\n')
    .filter(Boolean);
  let accepted = 0;
  for (const f of files)
    if (assertSame(readFileSync(f.startsWith('/') ? f : `${ROOT}/${f}`, 'utf8'))) accepted++;
  // Flux's own fixtures are plain YAML: most must take the fast path, or it is no faster.
  assert.ok(accepted >= files.length / 2, `${accepted} of ${files.length}`);
  const objects = [
    imageObjects('app', 'registry.example/app', 'semver:\n  range: ">=1.0.0"', {
      filterTags: "pattern: '^v(?P<v>.*)'\nextract: '$v'",
    }),
    gitObjects().replaceAll('{{GIT_URL}}', 'https://git.example/fleet.git'),
  ].join('---\n');
  assert.ok(assertSame(objects), 'the objects of the tests and the bench take the fast path');
  // Flux's documented ImageRepository, and the flow style many repositories write refs in.
  const documented = [
    'apiVersion: image.toolkit.fluxcd.io/v1',
    'kind: ImageRepository',
    'metadata: {name: podinfo, namespace: flux-system}',
    'spec:',
    '  image: ghcr.io/stefanprodan/podinfo',
    '  interval: 5m',
    '  secretRef: {name: regcred}',
    '  exclusionList:',
    '    - "^.*\\\\.sig$"',
    '  accessFrom: {namespaceSelectors: [{matchLabels: {kubernetes.io/metadata.name: apps}}]}',
    '',
  ].join('\n');
  assert.ok(assertSame(documented), 'escapes and single-line flow collections take the fast path');
});

test('fast YAML reader: anything beyond plain block YAML goes to the library', () => {
  for (const text of [
    'a: &x 1\nb: *x\n', // anchors, aliases
    'a: !!str 1\n', // tags
    'a: [1,\n  2]\n', // flow over more than a line
    'a: {b: 1,\n  c: 2}\n',
    'a: [1, 2,]\n', // a trailing comma, an empty entry, a pair in a sequence, a key alone
    'a: [1, , 2]\n',
    'a: [b: 1]\n',
    'a: {b}\n',
    'a: {b: }\n',
    'a: {? b : 1}\n',
    'a: {b: 1, b: 2}\n', // a duplicate key (the library reports it)
    'a: {"b": 1}\n',
    'a: {true: 1}\n',
    'a: {b: c # d}\n',
    'a: {b: &x 1}\n',
    'a: {b: !!str 1}\n',
    'a: {b: 1} c\n',
    'a: [b, "c\\q"]\n',
    'a: |\n  text\n', // block scalars
    'a: >-\n  text\n',
    'a: "x\\qy"\n', // an escape YAML does not have, or one cut short
    'a: "x\\x4"\n',
    'a: "x\\ud800"\n',
    'a: "x\\\n  y"\n',
    "a: 'it's'\n",
    'a: one\n  two\n', // multi-line plain scalar
    'a: 1\na: 2\n', // duplicate key (the library reports it)
    'a:\tb\n',
    'a: b\r\n',
    '\ufeffa: b\n',
    '%YAML 1.2\n---\na: b\n',
    'a: 0x10\n',
    'a: .inf\n',
    'true: x\n', // a key the core schema reads as a boolean
    '"a": b\n',
    '? a\n: b\n',
    '- a\n- b\n', // a top-level list
    'just text\n',
    'a: b: c\n',
    'a:\n- b\n  c\n',
    '<<: {a: 1}\n',
  ]) {
    assert.equal(readFastYaml(text), null, JSON.stringify(text));
  }
});

test('fast YAML reader: generated block documents agree with the library (fixed seed)', () => {
  // Mostly what Flux objects hold (so that many documents take the fast path and are compared),
  // some of what makes the reader give up, and arbitrary printable strings.
  const plain = fc.constantFrom(
    '',
    '""',
    "''",
    '~',
    'null',
    'Null',
    'NULL',
    'true',
    'False',
    'TRUE',
    'yes',
    'no',
    'on',
    '0',
    '+5',
    '007',
    '1.10',
    '1.',
    '.5',
    '1e3',
    '1E-3',
    '2024-01-01',
    '1.2.3',
    'v1.0.0',
    '"1.0"',
    "'true'",
    '"a # b"',
    'a#b',
    'a # comment',
    '">=1.0.0"',
    '"^.*\\\\.sig$"',
    '"tab\\there \\"q\\" \\/ \\\\"',
    '"\\x41\\u00e9\\U0001F600\\N\\_\\L\\P\\0\\a\\e\\ "',
    "'it''s'",
    "''''",
    '"\\q"',
    '"a\\"',
    "'^v(?P<v>.*)'",
    '"$v"',
    'http://x:5000/a',
    'a:b',
    'a, b',
    'x]',
    '[]',
    '{}',
    '[] # empty',
    'é ü 日本',
    'ghcr.io/org/app:1.2.3@sha256:abc',
  );
  const odd = fc.oneof(
    fc.constantFrom('-1', '-x', '@x', '`x', '"unterminated', "'a'b", 'a: b', "it's", '0x1f', '.nan', '|'),
    fc.stringMatching(/^[ -~]{0,12}$/),
  );
  const scalars = fc.oneof({ arbitrary: plain, weight: 12 }, { arbitrary: odd, weight: 1 });
  const keys = fc.oneof(
    {
      arbitrary: fc.constantFrom('a', 'b', 'c', 'spec', 'image', 'x.y/z', '_k', 'k-1', 'metadata', 'name'),
      weight: 30,
    },
    { arbitrary: fc.constantFrom('true', 'null', '1', '.5', 'a b', '"q"'), weight: 1 },
  );
  const indentOf = fc.constantFrom(2, 4);
  type Block = string[];
  const block: fc.Memo<Block> = fc.memo((depth) =>
    fc
      .array(
        fc
          .tuple(
            keys,
            depth <= 1
              ? scalars.map((s) => ({ s }))
              : fc.oneof(
                  scalars.map((s) => ({ s })),
                  block(depth - 1).map((b) => ({ b })),
                  fc
                    .array(
                      fc.oneof(
                        scalars.map((s) => ({ s })),
                        block(depth - 1).map((b) => ({ b })),
                      ),
                      { minLength: 1, maxLength: 3 },
                    )
                    .map((l) => ({ l })),
                ),
            indentOf,
            fc.constantFrom('', '  # note'),
            fc.boolean(),
          )
          .map(([k, v, ind, comment, sameIndentList]) => {
            const pad = ' '.repeat(ind);
            if ('s' in v) return [`${k}: ${v.s}${v.s && !v.s.includes('#') ? comment : ''}`];
            if ('b' in v) return [`${k}:${comment}`, ...v.b.map((l) => pad + l)];
            const lpad = sameIndentList ? '' : pad;
            const lines = [`${k}:`];
            for (const item of v.l) {
              if ('s' in item) lines.push(`${lpad}- ${item.s}`);
              else if (item.b.length > 0)
                lines.push(`${lpad}- ${item.b[0]}`, ...item.b.slice(1).map((l) => `${lpad}  ${l}`));
            }
            return lines;
          }),
        { minLength: 1, maxLength: 4 },
      )
      .map((entries) => entries.flat()),
  );
  // Single-line flow collections (`ref: {branch: main}`), nested, with some spacing the reader
  // gives up on and some it reads.
  const flowScalar = fc.oneof(
    { arbitrary: plain.filter((s) => !/[,[\]{}]/.test(s) || s === '[]' || s === '{}'), weight: 10 },
    { arbitrary: fc.constantFrom('a b', 'http://x:5000/a', 'b:c', 'b:', ':b', '-1', ''), weight: 2 },
    { arbitrary: odd, weight: 1 },
  );
  const flowText: fc.Memo<string> = fc.memo((depth) => {
    const value =
      depth <= 1 ? flowScalar : fc.oneof({ arbitrary: flowScalar, weight: 3 }, flowText(depth - 1));
    const sp = fc.constantFrom('', ' ', '  ');
    const seq = fc
      .tuple(fc.array(value, { maxLength: 3 }), sp, fc.constantFrom(', ', ',', ' , '))
      .map(([items, pad, comma]) => `[${pad}${items.join(comma)}${pad}]`);
    const map = fc
      .tuple(fc.array(fc.tuple(keys, value), { maxLength: 3 }), sp, fc.constantFrom(', ', ',', ' , '))
      .map(([entries, pad, comma]) => `{${pad}${entries.map(([k, v]) => `${k}: ${v}`).join(comma)}${pad}}`);
    return fc.oneof(seq, map);
  });
  let flowAccepted = 0;
  let flowRuns = 0;
  fc.assert(
    fc.property(
      fc.array(fc.tuple(keys, flowText(3), fc.constantFrom('', '  # note')), { minLength: 1, maxLength: 4 }),
      (entries) => {
        flowRuns++;
        if (assertSame(`spec:\n${entries.map(([k, f, c]) => `  ${k}: ${f}${c}`).join('\n')}\n`))
          flowAccepted++;
        assertSame(`items:\n${entries.map(([, f]) => `- ${f}`).join('\n')}\n`);
      },
    ),
    { seed: 2026, numRuns: 1500 },
  );
  assert.ok(flowAccepted > flowRuns / 10, `${flowAccepted} of ${flowRuns} flow documents accepted`);

  let accepted = 0;
  let runs = 0;
  fc.assert(
    fc.property(
      fc.array(block(3), { minLength: 1, maxLength: 3 }),
      fc.constantFrom('---\n', '---\n# c\n\n', '--- # doc\n'),
      (docs, sep) => {
        runs++;
        if (assertSame(docs.map((d) => d.join('\n') + '\n').join(sep))) accepted++;
      },
    ),
    { seed: 1212, numRuns: 1500 },
  );
  // The generator is mostly plain YAML: a good share must take the fast path, or nothing was compared.
  assert.ok(accepted > runs / 10, `${accepted} of ${runs} accepted`);
});

test('parseDocuments on the fast path still names the line of any field, from the library, when asked', () => {
  const text =
    '# lead\napiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: ns\nstringData:\n  token: abc\n---\n\nkind: X\nspec:\n  list:\n  - a: 1\n    b: 2\n';
  assert.notEqual(readFastYaml(text), null);
  const { docs, errors } = parseDocuments('f.yaml', text);
  assert.deepEqual(errors, []);
  assert.equal(docs.length, 2);
  assert.equal(docs[0]!.line, 2);
  assert.equal(docs[0]!.lineOf(['metadata', 'namespace']), 6);
  assert.equal(docs[0]!.lineOf(['stringData', 'token']), 8);
  assert.equal(docs[0]!.lineOf(['nope', 'deeper']), 2);
  assert.equal(docs[1]!.line, 11);
  assert.equal(docs[1]!.lineOf(['spec', 'list', 0, 'b']), 15);
});
