/**
 * The guard in words: the human output of `pawl run` and `pawl explain`. Pure; every sentence
 * names values, so a person can act on it without reading the JSON.
 */
import type { RatchetState } from './ratchet.js';
import type { PinStatus } from './pins.js';
import type { GuardVerdict, GuardEvent, Reason } from './types.js';
import { plainCommand, type CommandSpeller } from '../util/index.js';

/** Short labels for tables. */
export const REASON_LABELS: Readonly<Record<Reason, string>> = {
  'no-candidate': 'no candidate',
  'up-to-date': 'up to date',
  pinned: 'pinned by a person',
  'downgrade-blocked': 'downgrade blocked',
  equivalent: 'equally new',
  undecidable: 'cannot be ordered',
  'invalid-value': 'not a valid value',
  unverified: 'newest tag not verified (spec.verify)',
  'outside-window': 'outside the write window',
  'too-new': 'too new (minimum age)',
  batched: 'held for the commit batch',
  'candidate-missing': 'candidate missing from the registry',
  upgrade: 'upgrade',
  retarget: 'retarget to the policy’s image',
};

/** What a reason means, in general. */
export function reasonMeaning(reason: Reason): string {
  switch (reason) {
    case 'no-candidate':
      return 'The policy has no candidate: the last scan failed, was empty, selected nothing, or a regression is waiting for confirmation.';
    case 'up-to-date':
      return 'The line already holds the candidate.';
    case 'pinned':
      return 'The last commit that changed this line moved it backwards on purpose; pawl keeps it until a release first seen after that commit, or `pawl release`.';
    case 'downgrade-blocked':
      return 'The line holds a newer image than the candidate; pawl never writes an older one unless a person asks.';
    case 'equivalent':
      return 'The line and the candidate are equally new (for example 1.0.0 and v1.0.0); nothing to gain by writing.';
    case 'undecidable':
      return 'The line’s value cannot be ordered by the policy and the registry has no build times for it; pawl keeps it rather than guess.';
    case 'invalid-value':
      return 'The line’s value is not a valid image reference, tag, name or digest; pawl keeps it rather than guess or rewrite it as another image.';
    case 'unverified':
      return 'The newest tag the policy selects has no signature by a trusted key over its digest (spec.verify); it is never a candidate. A verified tag below it is written when it is newer than the line; the guard never goes below the line.';
    case 'outside-window':
      return 'The policy writes only inside its window (guard.window); the line is written when the window next opens. pawl rollback and pawl release are not held.';
    case 'too-new':
      return 'The candidate was first seen by pawl less than guard.minimumAge ago; a tag old enough is written instead when there is one newer than the line, else the line waits.';
    case 'batched':
      return 'The automation batches its commits (spec.git.commit.batch): the first update opened a window, and every update found until it ends is written in one commit (or one pull request) by the first pass after it. pawl rollback and pawl release are not held.';
    case 'candidate-missing':
      return 'The registry has no manifest for the candidate now (HEAD), so writing it could break a deployment.';
    case 'upgrade':
      return 'The candidate is newer than the line’s value and exists in the registry.';
    case 'retarget':
      return 'The line names another image than the policy’s; it is rewritten to the policy’s image, as Flux does.';
  }
}

export interface ExplainContext {
  /** `ns/name`. */
  policy: string;
  current: string;
  /** The candidate tag. */
  candidate: string | null;
  /** `ns/name` of the policy's ImageRepository, for the commands that name it. */
  repository?: string;
  /**
   * How the commands are spelled so that they run as printed where they are offered (with the
   * `-c` and `--state-dir` of the command or daemon offering them); default: bare `pawl …`.
   */
  command?: CommandSpeller;
}

/** The decision's sentence and what a person can do about it, one line each. */
export function explainDecision(d: GuardVerdict, ctx: ExplainContext): string[] {
  const lines = [d.detail];
  const advice = adviceFor(d.reason, ctx);
  if (advice) lines.push(advice);
  return lines;
}

/** What to do next, or null when nothing is needed. */
export function adviceFor(reason: Reason, ctx: ExplainContext): string | null {
  const { policy, candidate } = ctx;
  const cmd = ctx.command ?? plainCommand;
  const rollback = (to: string, reason = false) => cmd(['rollback', policy, '--to', to], { reason });
  switch (reason) {
    case 'downgrade-blocked':
      return candidate
        ? `To write ${candidate} anyway, roll back on purpose: ${rollback(candidate, true)} (the line then stays there until a newer release).`
        : `To roll back on purpose: ${rollback('TAG', true)}.`;
    case 'pinned':
      return `To upgrade now: ${cmd(['release', policy])}. A release first seen after the pin lifts it by itself.`;
    case 'undecidable':
      return `Make the value pass the policy’s filterTags, or publish build times (the org.opencontainers.image.created annotation or label); to replace it anyway: ${rollback(candidate ?? 'TAG')}.`;
    case 'invalid-value':
      return `Fix the line by hand, or write a tag on purpose: ${rollback(candidate ?? 'TAG')}.`;
    case 'candidate-missing':
      return `pawl tries again at the next run; ${cmd(['tags', ctx.repository ?? '<repository>', '--history'])} shows what the registry listed.`;
    case 'unverified':
      return 'Sign the newest image by its digest with a key of spec.verify.secretRef (cosign sign --key cosign.key IMAGE@DIGEST); pawl checks again at the next run.';
    case 'outside-window':
      return `To write now anyway: ${cmd(['release', policy])} (not held by the window), or ${rollback(candidate ?? 'TAG')}.`;
    case 'too-new':
      return `To write ${candidate ?? 'it'} before it is old enough: ${cmd(['release', policy])}, or lower guard.minimumAge.`;
    case 'batched':
      return `To write now anyway: ${cmd(['release', policy])} (not held by the batch).`;
    case 'no-candidate':
      return `${cmd(['explain', policy])} shows the last scans and any regression waiting for confirmation.`;
    default:
      return null;
  }
}

/** A pin's state in one sentence (from `pinStatus`). */
export function explainPin(s: PinStatus): string {
  return s.detail;
}

/** The high-water mark and any regression awaiting confirmation. */
export function explainRatchet(state: RatchetState | null, confirmations: number, windowMs: number): string {
  if (!state || state.highWater === null) return 'No high-water mark yet.';
  const at = state.highWaterAt ? ` since ${state.highWaterAt.toISOString()}` : '';
  let s = `High-water mark ${state.highWater}${at}.`;
  const p = state.pending;
  if (p) {
    s += ` ${state.highWater} is gone from the registry; ${p.candidate} has been selected by ${p.count} of ${confirmations} scans in a row over ${Math.round((p.lastAt.getTime() - p.firstAt.getTime()) / 1000)}s of the ${Math.round(windowMs / 1000)}s window before the regression is accepted.`;
  }
  return s;
}

/** One line per event, for `pawl explain` and logs. */
export function explainEvent(e: GuardEvent): string {
  const where =
    'file' in e && e.file !== undefined ? ` (${e.file}${e.line !== undefined ? `:${e.line}` : ''})` : '';
  switch (e.kind) {
    case 'stale-scan':
      return e.highWaterExists
        ? `Stale tag list: the scan selected ${e.selected}, older than ${e.highWater}, which still exists; kept ${e.highWater}.`
        : `The scan selected ${e.selected}, older than ${e.highWater}, which is gone; regression seen ${e.pendingCount ?? 1} time(s), not accepted yet.`;
    case 'regression-accepted':
      return `Regression accepted: ${e.from} is gone and ${e.confirmations} scans over ${Math.round(e.spanMs / 1000)}s agreed on ${e.to}.`;
    case 'downgrade-blocked':
      return `Downgrade blocked${where}: ${e.detail}`;
    case 'candidate-missing':
      return `Candidate missing${where}: ${e.detail}`;
    case 'pin':
      return `Pinned${where}: ${e.detail}`;
  }
}
