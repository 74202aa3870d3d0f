import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { commandSpeller, shellQuote } from '../../src/util/index.js';
import {
  adviceFor,
  explainDecision,
  explainEvent,
  explainRatchet,
  reasonMeaning,
  REASON_LABELS,
} from '../../src/guard/explain.js';
import { decisionEvent, toStoreEvent, withPolicy } from '../../src/guard/events.js';
import {
  parseTrailerLines,
  rollbackTrailers,
  trailerValues,
  TRAILER_NEW,
  TRAILER_OLD,
  TRAILER_POLICY,
  TRAILER_REASON,
} from '../../src/guard/trailers.js';
import type { Reason } from '../../src/guard/types.js';

const REASONS: Reason[] = [
  'no-candidate',
  'up-to-date',
  'pinned',
  'downgrade-blocked',
  'equivalent',
  'undecidable',
  'candidate-missing',
  'upgrade',
  'retarget',
];

describe('words', () => {
  test('every reason has a label and a meaning', () => {
    for (const r of REASONS) {
      assert.ok(REASON_LABELS[r].length > 0);
      assert.ok(reasonMeaning(r).length > 20);
    }
  });

  test('downgrade-blocked says how to roll back on purpose', () => {
    const lines = explainDecision(
      {
        action: 'keep',
        reason: 'downgrade-blocked',
        detail: 'Current 6.7.1 is newer than candidate 6.7.0 by semver.',
      },
      { policy: 'flux-system/podinfo', current: '6.7.1', candidate: '6.7.0' },
    );
    assert.equal(lines[0], 'Current 6.7.1 is newer than candidate 6.7.0 by semver.');
    assert.match(lines[1]!, /pawl rollback flux-system\/podinfo --to 6\.7\.0/);
  });

  test('pinned says how to release', () => {
    assert.match(adviceFor('pinned', { policy: 'a/b', current: '1', candidate: '2' })!, /pawl release a\/b/);
    assert.equal(adviceFor('upgrade', { policy: 'a/b', current: '1', candidate: '2' }), null);
  });

  test('the commands in the advice carry the options they are given, quoted for a shell', () => {
    const command = commandSpeller(['-c', '/etc/pawl/config', '--state-dir', '/var/lib/my state']);
    assert.equal(
      adviceFor('downgrade-blocked', { policy: 'a/b', current: '2', candidate: '1', command }),
      `To write 1 anyway, roll back on purpose: pawl rollback a/b --to 1 --reason "…" -c /etc/pawl/config --state-dir '/var/lib/my state' (the line then stays there until a newer release).`,
    );
    assert.equal(shellQuote("it's"), `'it'\\''s'`);
    assert.equal(shellQuote('flux-system/app'), 'flux-system/app');
  });

  test('ratchet and events in words', () => {
    assert.equal(explainRatchet(null, 3, 900_000), 'No high-water mark yet.');
    const s = explainRatchet(
      {
        specHash: 'x',
        highWater: '2.0.0',
        highWaterAt: new Date(0),
        pending: { candidate: '1.0.0', count: 2, firstAt: new Date(0), lastAt: new Date(60_000) },
      },
      3,
      900_000,
    );
    assert.match(s, /2\.0\.0 is gone.*1\.0\.0.*2 of 3 scans.*60s of the 900s/);
    assert.match(
      explainEvent({ kind: 'stale-scan', selected: '1.0.0', highWater: '2.0.0', highWaterExists: true }),
      /Stale tag list.*kept 2\.0\.0/,
    );
  });
});

describe('events', () => {
  test('decisions worth recording become events; others do not', () => {
    const ctx = { policy: 'a/b', file: 'f.yaml', line: 3, current: '2.0.0', candidate: '1.0.0' };
    const e = decisionEvent({ action: 'keep', reason: 'downgrade-blocked', detail: 'd' }, ctx);
    assert.deepEqual(e, {
      kind: 'downgrade-blocked',
      policy: 'a/b',
      file: 'f.yaml',
      line: 3,
      current: '2.0.0',
      candidate: '1.0.0',
      detail: 'd',
    });
    assert.equal(decisionEvent({ action: 'write', reason: 'upgrade', detail: 'd' }, ctx), null);
    const stored = toStoreEvent(e!, new Date(0), 'ghcr.io/org/app');
    assert.deepEqual(stored, {
      at: new Date(0),
      kind: 'downgrade-blocked',
      policy: 'a/b',
      repository: 'ghcr.io/org/app',
      detail: { file: 'f.yaml', line: 3, current: '2.0.0', candidate: '1.0.0', detail: 'd' },
    });
    assert.equal(
      withPolicy(
        [{ kind: 'regression-accepted', from: '2', to: '1', confirmations: 3, spanMs: 1 }],
        'a/b',
      )[0]!.policy,
      'a/b',
    );
  });
});

describe('trailers', () => {
  test('rollback trailers round-trip, and a newline in the reason cannot forge another trailer', () => {
    const text = rollbackTrailers({
      policy: 'a/b',
      old: '2.0.0',
      new: '1.0.0',
      reason: 'broken\nPawl-Release: a/b',
    });
    const t = parseTrailerLines(text);
    assert.deepEqual(trailerValues(t, TRAILER_POLICY), ['a/b']);
    assert.deepEqual(trailerValues(t, TRAILER_OLD), ['2.0.0']);
    assert.deepEqual(trailerValues(t, TRAILER_NEW), ['1.0.0']);
    assert.deepEqual(trailerValues(t, TRAILER_REASON), ['broken Pawl-Release: a/b']);
    assert.deepEqual(trailerValues(t, 'pawl-release'), []);
  });
});
