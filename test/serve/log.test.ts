/** The daemon's readable log lines (on a terminal): time, level, the object first, then the rest. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readableLine } from '../../src/serve/log.js';

test('a JSON record becomes one readable line naming its object first', () => {
  const line = readableLine(
    JSON.stringify({
      level: 40,
      time: Date.UTC(2026, 0, 2, 3, 4, 5),
      msg: 'run failed; retrying with backoff',
      error: 'registry down',
      job: 'ImageRepository/flux-system/app',
      trigger: 'interval',
    }),
  );
  assert.equal(
    line,
    '03:04:05 WARN  job=ImageRepository/flux-system/app run failed; retrying with backoff error="registry down" trigger=interval',
  );
  assert.equal(readableLine('not json'), 'not json');
});
