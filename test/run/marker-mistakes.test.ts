/**
 * `markerMistakes` (src/run/markers.ts) names each mistaken marker's file and 1-based line, with
 * the text around it as a person wrote it: LF or CRLF lines, the token more than once on a line,
 * the token outside a comment, the first line and the last line without a newline.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { markerMistakes } from '../../src/run/markers.js';
import type { ImageUpdateAutomation } from '../../src/config/index.js';
import type { ScannedFile } from '../../src/write/index.js';

const automation = { metadata: { namespace: 'apps', name: 'fleet' } } as unknown as ImageUpdateAutomation;
const policies = new Set(['apps/app', 'apps/other']);
const applied = new Set(['apps/app']);
const file = (text: string): ScannedFile => ({
  file: 'apps/app.yaml',
  path: '/x/apps/app.yaml',
  text,
  markers: [],
});
const lines = (text: string) =>
  markerMistakes([file(text)], automation, policies, applied).map((m) => [m.line, m.message.slice(0, 40)]);

test('each mistaken marker at its own line, whatever the line endings', () => {
  const lf = [
    'image: a:1 # {"$imagepolicy": "app"}', // 1: no namespace
    'ok: 1',
    'image: b:1 # {"$imagepolicy": "apps:app"}', // 3: fine
    'note: "{"$imagepolicy": "x"}" is not a comment', // 4: the token outside a comment
    '',
    'image: c:1 # {"$imagepolicy": "apps:app:tga"} {"$imagepolicy": "y"}', // 6: bad suffix, once
    'image: d:1 # {"$imagepolicy": "apps:missing"}', // 7: no such policy
  ].join('\n');
  assert.deepEqual(
    lines(lf).map((g) => g[0]),
    [1, 6, 7],
  );
  assert.deepEqual(
    lines(lf.replace(/\n/g, '\r\n')).map((g) => g[0]),
    [1, 6, 7],
  );
  assert.equal(lines(lf)[0]![1], 'marker "app" has no namespace; Flux read');
});

test('a policy no automation applies, on a last line without a newline', () => {
  const got = lines('a: 1\nb: 2\nimage: e:1 # {"$imagepolicy": "apps:other"}');
  assert.equal(got.length, 1);
  assert.equal(got[0]![0], 3);
});
