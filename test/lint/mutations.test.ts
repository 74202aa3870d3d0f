/**
 * Every mutation `npm run mutate` applies still finds its snippet exactly once. A refactor that
 * moves a mutated line makes the entry stale: the mutation run reports it, but that run is not
 * part of `npm test`, so without this a stale entry stays unnoticed until someone runs it.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { MUTATIONS } from '../../scripts/mutations.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

test('every mutation snippet occurs exactly once in its file', () => {
  const stale: string[] = [];
  const texts = new Map<string, string>();
  for (const m of MUTATIONS) {
    let text = texts.get(m.file);
    if (text === undefined) {
      text = readFileSync(join(root, m.file), 'utf8');
      texts.set(m.file, text);
    }
    const n = text.split(m.find).length - 1;
    if (n !== 1) stale.push(`${m.area}: ${m.file}: "${m.description}" found ${n} times`);
  }
  assert.ok(MUTATIONS.length > 100, `only ${MUTATIONS.length} mutations were read`);
  assert.deepEqual(stale, [], 'update these entries in scripts/mutations*.ts');
});
