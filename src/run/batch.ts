/**
 * The commit batch (`spec.git.commit.batch`, issue 25): the first pass that finds changes opens
 * a window and holds them; passes inside it hold what they find too (each plans afresh, so the
 * newest candidates and the guard's decisions at write time are what get written); the first
 * pass at or after the window's end writes them all in one commit, or one pull request. The
 * window's start is kept in the store, so `pawl run` from cron, the daemon and a restart all
 * keep to it. Pure: the clock is the caller's.
 */
import { formatDuration } from '../config/index.js';
import type { MarkerDecision } from './report.js';

export type BatchStep =
  /** Write now; `close`: a batch was open, and is done once the write lands. */
  | { action: 'write'; close: boolean }
  /** Hold the changes; `opened`: this pass opened the batch (its start is to be stored). */
  | { action: 'hold'; openedAt: Date; writesAt: Date; opened: boolean }
  /** Nothing to write; `close`: a batch was open and has nothing left to hold (a person set the values). */
  | { action: 'none'; close: boolean };

/**
 * What a pass does with `changes` edits, given the window (ms; undefined: no batching) and the
 * stored start of the open batch (null: none). Holds while now < start + window; a start in the
 * future (another host's clock) counts as now, so a batch never holds longer than its window.
 */
export function batchStep(
  windowMs: number | undefined,
  openedAt: Date | null,
  now: Date,
  changes: number,
): BatchStep {
  if (changes === 0) return { action: 'none', close: openedAt !== null };
  if (windowMs === undefined) return { action: 'write', close: openedAt !== null };
  if (openedAt === null)
    return { action: 'hold', openedAt: now, writesAt: later(now, windowMs), opened: true };
  const start = openedAt.getTime() > now.getTime() ? now : openedAt;
  const writesAt = later(start, windowMs);
  if (now.getTime() < writesAt.getTime()) return { action: 'hold', openedAt: start, writesAt, opened: false };
  return { action: 'write', close: true };
}

const later = (d: Date, ms: number): Date => new Date(d.getTime() + ms);

/** A held write, as the report's kept row says it: `batched`, and when it is written. */
export function heldDecision(
  d: MarkerDecision,
  step: Extract<BatchStep, { action: 'hold' }>,
  windowMs: number,
): MarkerDecision {
  return {
    ...d,
    action: 'keep',
    reason: 'batched',
    detail: `${d.current} → ${d.candidate ?? ''} is held by spec.git.commit.batch (${formatDuration(windowMs)}, opened ${step.openedAt.toISOString()}) so that later updates join its commit: writes at ${step.writesAt.toISOString()}`,
  };
}
