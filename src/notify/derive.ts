/**
 * Which of a pass's outcomes are worth a person's attention. Pure: the previous memory and
 * this pass's observation in, the events and the next memory out. Events are edge-triggered:
 * a line blocked from a downgrade pass after pass is reported when the block begins (or its
 * values change), not every pass; the Notifier's rate limit is a second guard on top.
 *
 * Objects a pass did not look at (an automation not run this time, a repository not scanned)
 * keep their memory: nothing is concluded from absence.
 */
import type { GuardEvent } from '../guard/index.js';
import type { AutomationReport, KeptReport, RunReport, ScanReport } from '../records/index.js';
import type { EventObject, EventObjectKind, AlertEvent } from './event.js';

/** One scan of an ImageRepository that finished (from the scanner's reports or the store). */
export interface ScanAttempt {
  /** `ns/name` of the ImageRepository. */
  repository: string;
  /** When it finished; attempts at or before the last one remembered are ignored. */
  at: Date;
  ok: boolean;
  error: string | null;
}

export interface PassObservation {
  /** When the pass ended. */
  at: Date;
  report: RunReport;
  /**
   * The guard's events of this pass with their policy (PolicyOutcome.events, or the store's
   * events since the pass began via `guardEventsFromRecords`). Without them there are no
   * stale-list events, and pins carry no commit.
   */
  guardEvents?: readonly GuardEvent[];
  /** Scans that finished since the last observation. Without them there are no scan events. */
  scans?: readonly ScanAttempt[];
}

/** A marked line in a state worth remembering. */
interface LineMemory {
  policy: string;
  reason: 'downgrade-blocked' | 'candidate-missing' | 'pinned' | 'too-new' | 'outside-window';
  current: string;
  candidate: string | null;
}

/**
 * What `eventsFrom` needs from earlier passes. Maps, copied (not converted) at each pass: the
 * daemon folds every pass into it, and rebuilding a 500-entry object of scans from entries and
 * back each time was a sixth of what a webhook pass allocated (issue 27). The daemon folds into
 * one memory in place (`foldEvents`), without the copy.
 */
export interface AlertMemory {
  /** `automation|file|line` → the notable state of that marked line. */
  lines: ReadonlyMap<string, LineMemory>;
  /** Policy → the stale-list episode it is in. */
  stale: ReadonlyMap<string, { highWater: string; selected: string }>;
  /** ImageRepository → failures in a row, the last attempt seen, whether ScanFailing was sent. */
  scans: ReadonlyMap<string, ScanMemory>;
  /** ImageUpdateAutomation → the error of its last failed pass. */
  failing: ReadonlyMap<string, string>;
  /** Policy → the newest tag that failed `spec.verify` and why (absent in memories of older pawls). */
  unverified?: ReadonlyMap<string, string>;
}

/** A repository's scans as remembered: `lastAt` is when the last one seen ended (ms). */
interface ScanMemory {
  failures: number;
  lastAt: number;
  alerted: boolean;
}

/** A memory a pass is folded into in place (`foldEvents`): the daemon's one, or a copy of the last. */
export interface FoldingMemory {
  lines: Map<string, LineMemory>;
  stale: Map<string, { highWater: string; selected: string }>;
  scans: Map<string, ScanMemory>;
  failing: Map<string, string>;
  unverified: Map<string, string>;
}
type Working = FoldingMemory;

export interface DeriveOptions {
  /** Failed scans in a row before ScanFailing (default 3). */
  scanFailures?: number;
}

export function emptyMemory(): FoldingMemory {
  return { lines: new Map(), stale: new Map(), scans: new Map(), failing: new Map(), unverified: new Map() };
}

/**
 * Kept lines worth an event. The gates' holds (`too-new`, `outside-window`) are expected and
 * sent as info; `unverified` is the policy's, not a line's (`unverifiedEvents`), so a line
 * written to an older verified tag still tells of the refused newer one, and once per policy.
 */
const NOTABLE = new Set<string>([
  'downgrade-blocked',
  'candidate-missing',
  'pinned',
  'too-new',
  'outside-window',
]);

function objectOf(kind: EventObjectKind, key: string): EventObject {
  const slash = key.indexOf('/');
  return slash < 0
    ? { kind, namespace: 'default', name: key }
    : { kind, namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

const lineKey = (automation: string, file: string, line: number): string => `${automation}|${file}|${line}`;

/**
 * The events between two observations. `previous` is the memory returned last time (or
 * `emptyMemory()`); keep the returned memory for the next call.
 */
export function eventsFrom(
  previous: AlertMemory,
  current: PassObservation,
  opts: DeriveOptions = {},
): { events: AlertEvent[]; memory: AlertMemory } {
  const memory: Working = {
    lines: new Map(previous.lines),
    stale: new Map(previous.stale),
    scans: new Map(previous.scans),
    failing: new Map(previous.failing),
    unverified: new Map(previous.unverified),
  };
  return { events: foldEvents(memory, current, opts), memory };
}

/**
 * `eventsFrom` into `memory` itself, which becomes the next memory: for the one caller that keeps
 * its memory and nothing else reads it (the daemon). Copying it was five maps a pass, its scans'
 * one entry a repository: at 10,000 images each pass left ~0.7 MB of tables in V8's
 * large-object space (issue 27).
 */
export function foldEvents(
  memory: FoldingMemory,
  current: PassObservation,
  opts: DeriveOptions = {},
): AlertEvent[] {
  const events: AlertEvent[] = [];
  const at = current.at;
  const emit = (e: Omit<AlertEvent, 'at'>): void => {
    events.push({ ...e, at });
  };

  for (const a of current.report.automations) automationEvents(a, memory, current, emit);
  unverifiedEvents(current.report, memory, emit);
  if (current.guardEvents) staleEvents(current.report, current.guardEvents, memory, emit);
  if (current.scans) scanEvents(current.scans, memory, opts.scanFailures ?? 3, emit);
  return events;
}

/**
 * `spec.verify`: an error when a policy's newest tag fails verification, once per tag and
 * reason; forgotten when the newest tag passes again. A policy the pass did not evaluate keeps
 * its memory (policies of automations not run are absent from the report).
 */
function unverifiedEvents(report: RunReport, memory: Working, emit: Emit): void {
  for (const p of report.policies) {
    if (!p.unverified) {
      if (p.error === null) memory.unverified.delete(p.name);
      continue;
    }
    const key = `${p.unverified.tag}\n${p.unverified.why}`;
    if (memory.unverified.get(p.name) === key) continue;
    memory.unverified.set(p.name, key);
    const then =
      p.candidate !== null
        ? `the newest verified tag, ${p.candidate}, is the candidate`
        : 'no tag below it is verified either';
    emit({
      object: objectOf('ImagePolicy', p.name),
      severity: 'error',
      reason: 'SignatureUnverified',
      message: `Signature not verified: ${p.unverified.tag} ${p.unverified.why}; it is not written, and ${then}.`,
      metadata: { tag: p.unverified.tag, ...(p.candidate !== null ? { candidate: p.candidate } : {}) },
    });
  }
}

type Emit = (e: Omit<AlertEvent, 'at'>) => void;

function automationEvents(a: AutomationReport, memory: Working, cur: PassObservation, emit: Emit): void {
  const object = objectOf('ImageUpdateAutomation', a.name);
  if (a.result === 'failed') {
    const error = a.error ?? 'unknown error';
    if (memory.failing.get(a.name) !== error) {
      emit({
        object,
        severity: 'error',
        reason: 'UpdateFailed',
        message: `ImageUpdateAutomation ${a.name} failed: ${error}`,
        metadata: {},
      });
    }
    memory.failing.set(a.name, error);
    // A failed pass decided nothing about its lines: their memory stands.
    return;
  }
  memory.failing.delete(a.name);
  if (a.result === 'dry-run') return;

  const pushed = a.result === 'pushed' && a.commit !== null;
  if (pushed && a.changes.length > 0) {
    const lines = a.changes.map((c) => `${c.file}:${c.line} ${c.setter}: ${c.old} → ${c.new} (${c.reason})`);
    emit({
      object,
      severity: 'info',
      reason: 'UpgradeWritten',
      message: `pushed ${a.commit!.slice(0, 12)} to ${a.branch ?? 'the branch'}:\n${lines.join('\n')}`,
      metadata: { commit: a.commit!, ...(a.branch ? { branch: a.branch } : {}) },
    });
  }

  const pr = a.pullRequest;
  if (pr && pr.action === 'opened') {
    emit({
      object,
      severity: 'info',
      reason: 'PullRequestOpened',
      message: `opened pull request #${pr.number} from ${a.branch ?? 'the branch'}: ${pr.url}${pr.note ? `\n${pr.note}` : ''}`,
      metadata: { pullRequest: String(pr.number), url: pr.url, ...(a.branch ? { branch: a.branch } : {}) },
    });
  }

  const seen = new Set<string>();
  for (const k of a.kept) {
    const key = lineKey(a.name, k.file, k.line);
    seen.add(key);
    const before = memory.lines.get(key);
    if (!NOTABLE.has(k.reason)) {
      if (before?.reason === 'pinned') pinLifted(a, before, k, undefined, emit);
      memory.lines.delete(key);
      continue;
    }
    const now: LineMemory = {
      policy: k.policy,
      reason: k.reason as LineMemory['reason'],
      current: k.current,
      candidate: k.candidate,
    };
    memory.lines.set(key, now);
    const same =
      before !== undefined &&
      before.reason === now.reason &&
      before.current === now.current &&
      (now.reason === 'pinned' || before.candidate === now.candidate);
    if (same) continue;
    emit(lineEvent(a, k, cur.guardEvents));
  }
  for (const c of a.changes) {
    const key = lineKey(a.name, c.file, c.line);
    seen.add(key);
    const before = memory.lines.get(key);
    if (before?.reason === 'pinned') pinLifted(a, before, undefined, c, emit);
    memory.lines.delete(key);
  }
  // Lines gone from the automation's tree (marker removed, file deleted) are forgotten quietly.
  const prefix = `${a.name}|`;
  for (const key of [...memory.lines.keys()]) {
    if (key.startsWith(prefix) && !seen.has(key)) memory.lines.delete(key);
  }
}

function lineEvent(
  a: AutomationReport,
  k: KeptReport,
  guardEvents: readonly GuardEvent[] | undefined,
): Omit<AlertEvent, 'at'> {
  const where = `(${k.file}:${k.line})`;
  const metadata: Record<string, string> = {
    automation: a.name,
    file: `${k.file}:${k.line}`,
    current: k.current,
    ...(k.candidate !== null ? { candidate: k.candidate } : {}),
  };
  const object = objectOf('ImagePolicy', k.policy);
  switch (k.reason) {
    case 'downgrade-blocked':
      return {
        object,
        severity: 'error',
        reason: 'DowngradeBlocked',
        message: `Downgrade blocked ${where}: ${k.detail}`,
        metadata,
      };
    case 'candidate-missing':
      return {
        object,
        severity: 'error',
        reason: 'CandidateMissing',
        message: `Candidate missing ${where}: ${k.detail}`,
        metadata,
      };
    case 'too-new':
    case 'outside-window':
      return {
        object,
        severity: 'info',
        reason: 'UpdateHeld',
        message: `Update held ${where} (${k.reason}): ${k.detail}`,
        metadata: { ...metadata, gate: k.reason },
      };
    default: {
      const pin = guardEvents?.find(
        (e) => e.kind === 'pin' && e.policy === k.policy && e.file === k.file && e.line === k.line,
      );
      const commit = pin?.kind === 'pin' ? pin.commit : undefined;
      return {
        object,
        severity: 'info',
        reason: 'PinCreated',
        message: `Pinned ${where}: ${k.detail}`,
        metadata: { ...metadata, ...(commit ? { commit } : {}) },
      };
    }
  }
}

function pinLifted(
  a: AutomationReport,
  before: LineMemory,
  kept: KeptReport | undefined,
  written: AutomationReport['changes'][number] | undefined,
  emit: Emit,
): void {
  const file = written ? `${written.file}:${written.line}` : `${kept!.file}:${kept!.line}`;
  const message = written
    ? `Pin lifted (${file}): ${written.new} written over ${written.old}, pinned since a person moved it back.`
    : `Pin lifted (${file}): the line now holds ${kept!.current} (${kept!.reason}); it was pinned at ${before.current}.`;
  emit({
    object: objectOf('ImagePolicy', before.policy),
    severity: 'info',
    reason: 'PinLifted',
    message,
    metadata: {
      automation: a.name,
      file,
      ...(written && a.commit ? { commit: a.commit } : {}),
    },
  });
}

function staleEvents(
  report: RunReport,
  guardEvents: readonly GuardEvent[],
  memory: Working,
  emit: Emit,
): void {
  // The few policies with guard events, found once rather than by a search for each policy.
  const byPolicy = new Map<string, GuardEvent[]>();
  for (const e of guardEvents) {
    if (e.policy === undefined) continue;
    const list = byPolicy.get(e.policy);
    if (list) list.push(e);
    else byPolicy.set(e.policy, [e]);
  }
  for (const p of report.policies) {
    const mine = byPolicy.get(p.name);
    const open = memory.stale.get(p.name);
    if (mine === undefined && open === undefined) continue;
    const stale = mine?.filter((e) => e.kind === 'stale-scan').at(-1);
    const accepted = mine?.find((e) => e.kind === 'regression-accepted');
    const object = objectOf('ImagePolicy', p.name);
    if (stale?.kind === 'stale-scan') {
      if (!open) {
        emit({
          object,
          severity: 'error',
          reason: 'StaleTagList',
          message: stale.highWaterExists
            ? `Stale tag list: the scan selected ${stale.selected}, older than ${stale.highWater}, which still exists; kept ${stale.highWater}.`
            : `The scan selected ${stale.selected}, older than ${stale.highWater}, which is gone; regression seen ${stale.pendingCount ?? 1} time(s), not accepted yet.`,
          metadata: { selected: stale.selected, highWater: stale.highWater },
        });
      }
      memory.stale.set(p.name, { highWater: stale.highWater, selected: stale.selected });
      continue;
    }
    if (!open) continue;
    if (accepted?.kind === 'regression-accepted') {
      emit({
        object,
        severity: 'info',
        reason: 'StaleTagListEnded',
        message: `Regression accepted: ${accepted.from} is gone and ${accepted.confirmations} scans over ${Math.round(accepted.spanMs / 1000)}s agreed on ${accepted.to}.`,
        metadata: { highWater: accepted.to },
      });
      memory.stale.delete(p.name);
    } else if (p.error === null && p.candidate !== null) {
      // A failed scan says nothing about whether the list is still stale; a good selection does.
      emit({
        object,
        severity: 'info',
        reason: 'StaleTagListEnded',
        message: `The tag list agrees again: ${p.name} selects ${p.candidate} (high-water mark ${p.highWater ?? p.candidate}).`,
        metadata: { highWater: p.highWater ?? p.candidate },
      });
      memory.stale.delete(p.name);
    }
  }
}

const NEVER_SCANNED: ScanMemory = Object.freeze({ failures: 0, lastAt: 0, alerted: false });

function scanEvents(scans: readonly ScanAttempt[], memory: Working, threshold: number, emit: Emit): void {
  const ordered = [...scans].sort((a, b) => a.at.getTime() - b.at.getTime());
  for (const s of ordered) {
    const st = memory.scans.get(s.repository) ?? NEVER_SCANNED;
    const at = s.at.getTime();
    if (st !== NEVER_SCANNED && at <= st.lastAt) continue;
    const next = { failures: st.failures, lastAt: at, alerted: st.alerted };
    if (!s.ok) {
      next.failures = st.failures + 1;
      if (next.failures >= threshold && !st.alerted) {
        emit({
          object: objectOf('ImageRepository', s.repository),
          severity: 'error',
          reason: 'ScanFailing',
          message: `The last ${next.failures} scans of ImageRepository ${s.repository} failed: ${s.error ?? 'unknown error'}`,
          metadata: {},
        });
        next.alerted = true;
      }
    } else {
      if (st.alerted) {
        emit({
          object: objectOf('ImageRepository', s.repository),
          severity: 'info',
          reason: 'ScanRecovered',
          message: `ImageRepository ${s.repository} scanned again after ${st.failures} failed scans.`,
          metadata: {},
        });
      }
      next.failures = 0;
      next.alerted = false;
    }
    memory.scans.set(s.repository, next);
  }
}

/** The scanner's reports as attempts (suspended repositories made none). */
export function scanAttempts(reports: readonly ScanReport[], at: Date): ScanAttempt[] {
  return reports
    .filter((r) => !r.suspended && (r.scanned || r.error !== null))
    .map((r) => ({ repository: r.name, at, ok: r.scanned, error: r.error }));
}

/** The store's event records (`store.events({ since })`) as the guard's events. */
export function guardEventsFromRecords(
  records: readonly { kind: string; policy: string | null; detail: Record<string, unknown> }[],
): GuardEvent[] {
  const out: GuardEvent[] = [];
  const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
  const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);
  for (const r of records) {
    const d = r.detail;
    const policy = r.policy ?? undefined;
    const base = policy !== undefined ? { policy } : {};
    switch (r.kind) {
      case 'stale-scan': {
        const selected = str(d.selected);
        const highWater = str(d.highWater);
        if (selected === undefined || highWater === undefined) break;
        const pendingCount = num(d.pendingCount);
        out.push({
          kind: 'stale-scan',
          ...base,
          selected,
          highWater,
          highWaterExists: d.highWaterExists === true,
          ...(pendingCount !== undefined ? { pendingCount } : {}),
        });
        break;
      }
      case 'regression-accepted': {
        const from = str(d.from);
        const to = str(d.to);
        if (from === undefined || to === undefined) break;
        out.push({
          kind: 'regression-accepted',
          ...base,
          from,
          to,
          confirmations: num(d.confirmations) ?? 0,
          spanMs: num(d.spanMs) ?? 0,
        });
        break;
      }
      case 'pin': {
        const commit = str(d.commit);
        const file = str(d.file);
        const line = num(d.line);
        if (commit === undefined) break;
        out.push({
          kind: 'pin',
          ...base,
          ...(file !== undefined ? { file } : {}),
          ...(line !== undefined ? { line } : {}),
          current: str(d.current) ?? '',
          candidate: str(d.candidate) ?? '',
          commit,
          detail: str(d.detail) ?? '',
        });
        break;
      }
      default:
        break;
    }
  }
  return out;
}
