/**
 * Fuzz-style property test of the setter reader and writer on real files: generated documents
 * of YAML-ish lines, arbitrary Unicode with control characters, raw bytes that are not UTF-8,
 * CRLF and BOMs, with one marked line somewhere. `applySetters` never throws, and no byte
 * outside the marked value ever changes: each file ends either exactly as it was, or with only
 * `app:1.0.0` on the marked line turned into `app:2.0.0`. A file that is not UTF-8 is refused
 * ("not UTF-8, left untouched") and keeps every byte. Fixed seed, printed on failure.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { isUtf8 } from 'node:buffer';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { applySetters, parseImage } from '../../src/write/setters/apply.js';
import { findMarkers } from '../../src/write/setters/markers.js';

const SEED = 4_2026;
const MARKED = Buffer.from('image: app:1.0.0 # {"$imagepolicy": "ns:p"}');
const WRITTEN = Buffer.from('image: app:2.0.0 # {"$imagepolicy": "ns:p"}');

/** Lines most manifests are made of. */
const plain = fc.constantFrom(
  'a: 1',
  '  b: "x"',
  '- c',
  '# comment',
  "d: 'it''s'",
  'e: [1, 2]',
  'f: {g: h}',
  '',
);
/** Lines at and past the edge of what the quick reader takes (the library or an error then). */
const odd = fc.constantFrom(
  'key: |',
  'key: >-',
  '  text',
  '---',
  '...',
  'h: "unterminated',
  "i: 'also",
  'j: "esc\\"aped"',
  '  - k: l',
  '&anchor m: n',
  'o: *anchor',
  '? complex',
);
const line = fc.oneof(
  { weight: 12, arbitrary: plain.map((s) => Buffer.from(s)) },
  { weight: 3, arbitrary: odd.map((s) => Buffer.from(s)) },
  // Any Unicode, control characters and lone surrogates included (encoded as Node encodes them).
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }).map((s) => Buffer.from(s)) },
  // Raw bytes: mostly not UTF-8.
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 12 }).map((b) => Buffer.from(b)) },
);
const doc = fc.record({
  before: fc.array(line, { maxLength: 8 }),
  after: fc.array(line, { maxLength: 8 }),
  indent: fc.constantFrom('', '  ', '    '),
  eol: fc.constantFrom('\n', '\r\n'),
  bom: fc.boolean(),
});

const temps: string[] = [];
after(async () => {
  for (const t of temps) await rm(t, { recursive: true, force: true });
});

test('applySetters never throws and never changes a byte outside the marked value', async () => {
  const root = await mkdtemp(join(tmpdir(), 'pawl-fuzz-setters-'));
  temps.push(root);
  const file = join(root, 'f.yaml');
  const images = new Map([['ns:p', parseImage('app:2.0.0')]]);
  let written = 0;
  let refused = 0;
  await fc.assert(
    fc.asyncProperty(doc, async ({ before, after: rest, indent, eol, bom }) => {
      const nl = Buffer.from(eol);
      const lines = [...before, Buffer.concat([Buffer.from(indent), MARKED]), ...rest];
      const join = (ls: Buffer[]) => Buffer.concat(ls.flatMap((l) => [l, nl]));
      const head = Buffer.concat([bom ? Buffer.from([0xef, 0xbb, 0xbf]) : Buffer.alloc(0), join(before)]);
      const original = Buffer.concat([head, join(lines.slice(before.length))]);
      const expectedIfWritten = Buffer.concat([head, Buffer.from(indent), WRITTEN, nl, join(rest)]);
      await writeFile(file, original);
      const result = await applySetters(root, '.', images);
      const now = await readFile(file);
      if (!isUtf8(original)) {
        refused++;
        assert.deepEqual(now, original, 'a file that is not UTF-8 keeps every byte');
        assert.match(result.errors[0]?.message ?? '', /^not UTF-8, left untouched/);
        return;
      }
      // The reader itself, on the same text: no exception escapes either.
      findMarkers(original.toString('utf8'), 'f.yaml');
      if (now.equals(original)) return;
      written++;
      assert.deepEqual(now, expectedIfWritten, 'only the marked value changed');
    }),
    { numRuns: 400, seed: SEED },
  );
  // The property means little unless both outcomes happen.
  assert.ok(written > 20, `only ${written} files rewritten`);
  assert.ok(refused > 20, `only ${refused} files refused`);
});
