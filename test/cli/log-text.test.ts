/** Issue 23, item 9: on a terminal, `run`'s warnings are text like its errors; JSON lines otherwise. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../src/util/log.js';

function logged(text: boolean): string {
  const dir = mkdtempSync(join(tmpdir(), 'pawl-log-'));
  try {
    const fd = openSync(join(dir, 'log'), 'w');
    const log = createLogger('warn', fd, undefined, { text });
    log.warn('clusters/prod/web.yaml:3: warning: ImagePolicy a/b: unknown field spec.filterTag');
    log.warn({ repository: 'flux-system/web' }, 'scan is old');
    log.info('not shown at warn');
    closeSync(fd);
    return readFileSync(join(dir, 'log'), 'utf8');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('text mode: one "pawl: warning: …" line a record, fields after the message', () => {
  assert.equal(
    logged(true),
    'pawl: warning: clusters/prod/web.yaml:3: warning: ImagePolicy a/b: unknown field spec.filterTag\n' +
      'pawl: warning: scan is old (repository=flux-system/web)\n',
  );
});

test('JSON mode (--json, or not a terminal): JSON lines as before', () => {
  const lines = logged(false)
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual(
    lines.map((l) => [l.level, l.msg]),
    [
      [40, 'clusters/prod/web.yaml:3: warning: ImagePolicy a/b: unknown field spec.filterTag'],
      [40, 'scan is old'],
    ],
  );
});
