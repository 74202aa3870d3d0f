/**
 * The gates of SPEC §9 that hold a candidate back by time: the write window and the minimum age.
 * Pure: the caller passes the clock's `now` and the store's first-seen time. A gate only ever
 * turns a `write` into a `keep` (decide.ts applies it after every ordering row), so it can never
 * make pawl write an older image.
 */
import type { WriteWindow } from '../config/index.js';
import { formatDuration } from '../config/index.js';
import { nextMatch, parseCron } from '../util/index.js';

/** A held write: the reason and the sentence for `pawl explain`. */
export interface Gate {
  reason: 'outside-window' | 'too-new';
  detail: string;
}

export type WindowState = { open: true; closes: Date } | { open: false; opens: Date | null };

/**
 * Open when some matching minute s has s <= now < s + duration: the first match at or after
 * now - duration (exclusive), if it is not after now.
 */
export function windowState(w: WriteWindow, now: Date): WindowState {
  const cron = parseCron(w.schedule, w.timeZone);
  const from = new Date(now.getTime() - w.duration + 1);
  const s = nextMatch(cron, from);
  if (s && s.getTime() <= now.getTime()) {
    // The window may be extended by later matches (`* 9-17 * * *`); report the first close.
    return { open: true, closes: new Date(s.getTime() + w.duration) };
  }
  return { open: false, opens: nextMatch(cron, now) };
}

/** The window gate, or null when writing is allowed now. */
export function windowGate(w: WriteWindow | undefined, now: Date): Gate | null {
  if (!w) return null;
  const st = windowState(w, now);
  if (st.open) return null;
  const where = `schedule "${w.schedule}" in ${w.timeZone}, open ${formatDuration(w.duration)} each`;
  return {
    reason: 'outside-window',
    detail: st.opens
      ? `Outside the write window (${where}); writes at ${when(st.opens, now)}.`
      : `Outside the write window (${where}), which never opens in the next eight years; fix guard.window.`,
  };
}

/** When a tag first seen at `firstSeen` becomes old enough. */
export function oldEnoughAt(firstSeen: Date, minimumAge: number): Date {
  return new Date(firstSeen.getTime() + minimumAge);
}

/** `2026-12-02T10:00Z, in 50m`: a time and how far away it is, for details. */
export function when(at: Date, now: Date): string {
  const iso = at
    .toISOString()
    .replace(/:00\.000Z$/, 'Z')
    .replace(/\.000Z$/, 'Z');
  const ms = Math.max(0, at.getTime() - now.getTime());
  // Whole minutes up: "in 0s" would read as now while it is not.
  const rounded = ms >= 60_000 ? Math.ceil(ms / 60_000) * 60_000 : Math.ceil(ms / 1000) * 1000;
  return `${iso}, in ${formatDuration(rounded)}`;
}
