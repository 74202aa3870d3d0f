import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, openSync, closeSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redactor, createLogger } from '../../src/util/index.js';

test('a logger given a redactor scrubs the secrets it learns later, in messages and fields', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pawl-log-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'log');
  const fd = openSync(file, 'w');
  const redactor = new Redactor();
  const log = createLogger('info', fd, redactor);
  // Told after the logger exists, as the store's password is (it is read when the store opens).
  redactor.add('s3cr3t-store-pw');
  log.info({ url: 'postgres://pawl:s3cr3t-store-pw@db/pawl' }, 'connecting with s3cr3t-store-pw');
  log.info('nothing secret');
  closeSync(fd);
  const text = readFileSync(file, 'utf8');
  assert.ok(!text.includes('s3cr3t-store-pw'), text);
  assert.match(text, /connecting with \[redacted\]/);
  assert.match(text, /nothing secret/);
});
