/**
 * Pins from Git history (SPEC §4 "Pins"): a marked line whose last change moved it backwards is
 * held there by a person until a new release appears or `pawl release` lifts it. Pure: the
 * history comes from src/git/history.ts, first-seen times from the store.
 */
import { isReleaseOf, isRollbackOf, trailerValues, TRAILER_REASON } from './trailers.js';
import type { LineChange, Comparator, OrderedBy, Pin } from './types.js';
import { parseMarkerValue, sameImageName } from './values.js';

export interface PinInput {
  /** The last change of the marked line; null when unknown (no history). */
  history: LineChange | null;
  order: Comparator;
  buildTimeOrder: Comparator;
  /** The policy's candidate tag now. */
  candidate: string | null;
  /** When pawl first saw the candidate tag (store `tagInfo`). */
  candidateFirstSeen: Date | null;
  /** The candidate was in the very first scan of an empty store: its first-seen time means nothing. */
  candidateInitial: boolean;
  /** A `Pawl-Release` commit for this policy follows the pinning commit (`releasedSince`). */
  released: boolean;
  manualEdits: 'Respect' | 'Override';
  /** `compare: BuildTime` orders the move by build times only. */
  compare?: 'Policy' | 'BuildTime';
}

export type PinState =
  /** No history, or a setting turned pins off. */
  | 'none'
  | 'override'
  /** The line was added by its last commit: a new line is upgraded normally. */
  | 'added'
  /** The last change did not move the value backwards (or could not be ordered). */
  | 'not-backwards'
  | 'released'
  /** A release first seen after the pinning commit lifts it. */
  | 'lifted'
  | 'pinned';

export interface PinStatus {
  state: PinState;
  /** The pin itself for `pinned`, `lifted` and `released` (what `pawl explain` shows). */
  pin: Pin | null;
  detail: string;
}

/** The active pin of a line, or null. */
export function pinFor(input: PinInput): Pin | null {
  const s = pinStatus(input);
  return s.state === 'pinned' ? s.pin : null;
}

export function pinStatus(input: PinInput): PinStatus {
  const h = input.history;
  if (input.manualEdits === 'Override')
    return { state: 'override', pin: null, detail: 'manualEdits: Override turns pins off.' };
  if (!h) return { state: 'none', pin: null, detail: 'No Git history for this line.' };
  if (h.previous === null)
    return {
      state: 'added',
      pin: null,
      detail: `The line was added in ${short(h.commit)}; a new line is upgraded normally.`,
    };

  const policy = policyOfSetter(h.setter);
  const rollback = policy !== null && isRollbackOf(h.trailers, policy);
  const move = backwards(input, { ...h, previous: h.previous });
  if (!rollback && !(move.cmp !== null && move.cmp < 0)) {
    const why =
      move.cmp === null
        ? 'could not be ordered'
        : move.cmp === 0
          ? 'kept it equally new'
          : 'moved it forwards';
    return {
      state: 'not-backwards',
      pin: null,
      detail: `The last change ${short(h.commit)} (${h.previous} → ${h.value}) ${why}; no pin.`,
    };
  }

  const reason = trailerValues(h.trailers, TRAILER_REASON)[0];
  const pin: Pin = {
    value: h.value,
    previous: h.previous,
    commit: h.commit,
    author: h.author,
    time: h.time,
    subject: h.subject,
    kind: rollback ? 'rollback' : 'manual',
    ...(reason !== undefined ? { reason } : {}),
    ...(move.cmp !== null ? { orderedBy: move.by } : {}),
  };
  // A rollback's author is the person who asked (the automation commits it); older ones were the bot's.
  const by =
    `${h.author.name}${rollback ? ' (pawl rollback)' : ''} in ${short(h.commit)} at ${h.time.toISOString()}` +
    (reason !== undefined ? `, because: ${reason}` : '');
  if (input.released)
    return { state: 'released', pin, detail: `Pinned at ${h.value} by ${by}; lifted by pawl release.` };
  const c = input.candidate;
  if (
    c !== null &&
    !input.candidateInitial &&
    input.candidateFirstSeen !== null &&
    seenAfter(input.candidateFirstSeen, h.time)
  ) {
    return {
      state: 'lifted',
      pin,
      detail: `Pinned at ${h.value} by ${by}; lifted by ${c}, first seen ${input.candidateFirstSeen.toISOString()}, after the pin.`,
    };
  }
  const waiting =
    c === null
      ? 'there is no candidate'
      : input.candidateInitial || input.candidateFirstSeen === null
        ? `${c} has no known first-seen time (seen in the first scan of an empty state), so it cannot lift the pin`
        : `${c} was first seen ${input.candidateFirstSeen.toISOString()}, before the pin`;
  return { state: 'pinned', pin, detail: `Pinned at ${h.value} (from ${h.previous}) by ${by}; ${waiting}.` };
}

/**
 * A tag first seen after the pinning commit, in whole seconds: git keeps a commit's time to the
 * second, so a tag first seen at 12:00:00.400 and a rollback committed at 12:00:00.900 (stored
 * as 12:00:00) cannot be told apart, and the pin holds. Read in milliseconds, that tag would lift
 * the rollback made after it.
 */
function seenAfter(firstSeen: Date, pinned: Date): boolean {
  return Math.floor(firstSeen.getTime() / 1000) > Math.floor(pinned.getTime() / 1000);
}

/** `ns:name[:field]` → `ns/name`. */
export function policyOfSetter(setter: string): string | null {
  const parts = setter.split(':');
  if (parts.length < 2 || !parts[0] || !parts[1]) return null;
  return `${parts[0]}/${parts[1]}`;
}

/** True when a `Pawl-Release` trailer for the line's policy is among `trailers` (helper for callers walking history). */
export function releasesPolicy(trailers: LineChange['trailers'], policy: string): boolean {
  return isReleaseOf(trailers, policy);
}

// Compares the value the commit wrote against the one it replaced: <0 means it went backwards.
function backwards(
  input: PinInput,
  h: LineChange & { previous: string },
): { cmp: number | null; by: OrderedBy } {
  const now = parseMarkerValue(h.field, h.value);
  const before = parseMarkerValue(h.field, h.previous);
  if (h.field === 'name') return { cmp: null, by: 'policy' };
  // Another image before: its tags mean nothing under this policy.
  if (now.name !== null && before.name !== null && !sameImageName(now.name, before.name))
    return { cmp: null, by: 'policy' };
  if (now.tag !== null && before.tag !== null && now.tag !== before.tag) {
    if (input.compare !== 'BuildTime') {
      const p = input.order(now.tag, before.tag);
      if (p !== null) return { cmp: p, by: 'policy' };
    }
    return { cmp: input.buildTimeOrder(now.tag, before.tag), by: 'build-time' };
  }
  const a = now.digest ?? null;
  const b = before.digest ?? null;
  if (a && b && a !== b) return { cmp: input.buildTimeOrder(a, b), by: 'build-time' };
  return { cmp: 0, by: 'policy' };
}

function short(sha: string): string {
  return sha.slice(0, 12);
}
