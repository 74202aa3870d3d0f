/**
 * The commit batch's arithmetic (spec.git.commit.batch): when a pass opens a batch, holds its
 * writes, writes them, or closes a batch with nothing left to write. Pure; the clock is a value.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { batchStep, heldDecision, type BatchStep } from '../../src/run/batch.js';

const T = (s: string): Date => new Date(`2026-12-02T${s}Z`);
const TEN = 10 * 60_000;

test('batchStep: the table', () => {
  const rows: [string, number | undefined, Date | null, Date, number, BatchStep][] = [
    ['no window: write at once', undefined, null, T('04:00:00'), 3, { action: 'write', close: false }],
    [
      'no window, a batch left open (window removed): write and close',
      undefined,
      T('03:00:00'),
      T('04:00:00'),
      1,
      { action: 'write', close: true },
    ],
    ['nothing to write, none open', TEN, null, T('04:00:00'), 0, { action: 'none', close: false }],
    [
      'nothing to write, one open (a person set the values): close it',
      TEN,
      T('04:00:00'),
      T('04:05:00'),
      0,
      { action: 'none', close: true },
    ],
    [
      'the first change opens the batch',
      TEN,
      null,
      T('04:00:00'),
      1,
      { action: 'hold', openedAt: T('04:00:00'), writesAt: T('04:10:00'), opened: true },
    ],
    [
      'inside the window: held',
      TEN,
      T('04:00:00'),
      T('04:05:00'),
      5,
      { action: 'hold', openedAt: T('04:00:00'), writesAt: T('04:10:00'), opened: false },
    ],
    [
      'a millisecond before the end: held',
      TEN,
      T('04:00:00'),
      new Date(T('04:10:00').getTime() - 1),
      5,
      { action: 'hold', openedAt: T('04:00:00'), writesAt: T('04:10:00'), opened: false },
    ],
    ['at the end: written', TEN, T('04:00:00'), T('04:10:00'), 5, { action: 'write', close: true }],
    [
      'long after the end (no pass ran): written',
      TEN,
      T('04:00:00'),
      T('09:00:00'),
      2,
      { action: 'write', close: true },
    ],
    [
      'a start in the future (another clock) counts as now',
      TEN,
      T('05:00:00'),
      T('04:00:00'),
      1,
      { action: 'hold', openedAt: T('04:00:00'), writesAt: T('04:10:00'), opened: false },
    ],
  ];
  for (const [what, windowMs, openedAt, now, changes, want] of rows)
    assert.deepEqual(batchStep(windowMs, openedAt, now, changes), want, what);
});

test('heldDecision: kept as batched, saying when it is written', () => {
  const step = { action: 'hold', openedAt: T('04:00:00'), writesAt: T('04:10:00'), opened: true } as const;
  const held = heldDecision(
    {
      file: 'app.yaml',
      line: 3,
      setter: 'ns:app:tag',
      policy: 'ns/app',
      action: 'write',
      current: '1.0.0',
      candidate: '1.1.0',
      reason: 'upgrade',
      detail: '',
    },
    step,
    TEN,
  );
  assert.equal(held.action, 'keep');
  assert.equal(held.reason, 'batched');
  assert.equal(held.candidate, '1.1.0', 'the candidate it will write');
  assert.match(
    held.detail,
    /^1\.0\.0 → 1\.1\.0 is held by spec\.git\.commit\.batch \(10m, opened 2026-12-02T04:00:00\.000Z\)/,
  );
  assert.match(held.detail, /writes at 2026-12-02T04:10:00\.000Z$/);
});
