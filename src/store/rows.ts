/** Rows as both backends return them, and their records: one conversion, so the backends agree. */
import type {
  Anomaly,
  Decision,
  DecisionRecord,
  EventRecord,
  RecordedResponse,
  RunKind,
  ScanOutcome,
  ScanRecord,
  TagDiff,
  TagInfo,
} from '../records/index.js';
import type { PolicyState, RawScanResponses, RunRecord, ScanResult, SelectionRecord } from './types.js';
import { tagListChecksum } from './tags.js';
import { sharedNameKey } from '../util/index.js';

/**
 * What a good scan's end sets, in the order both backends' UPDATE names the columns: tag_count,
 * checksum, added, removed, anomalies, requests.
 */
export function goodScanColumns(
  tags: readonly string[],
  diff: TagDiff,
  result: ScanResult,
  checksum = tagListChecksum(tags),
): [number, string, string, string, string, number] {
  return [
    tags.length,
    checksum,
    JSON.stringify(diff.added),
    JSON.stringify(diff.removed),
    JSON.stringify([...(result.anomalies ?? []), ...diff.anomalies]),
    result.requests,
  ];
}

/** A `scans` row: times in milliseconds since the epoch, lists as JSON text. */
export interface ScanRow {
  id: number;
  repository: string;
  image: string;
  started_at: number;
  ended_at: number | null;
  outcome: ScanOutcome;
  error: string | null;
  tag_count: number | null;
  checksum: string | null;
  added: string;
  removed: string;
  anomalies: string;
  requests: number;
  /**
   * A good scan's list scan: the scan whose id the rows of its tags carry in last_scan_id (itself
   * when its list changed, else the previous good scan's list scan). Null on failed and running
   * scans, and on good scans recorded before the column (each wrote its own rows): read it
   * through `listOf`.
   */
  list_scan_id?: number | null;
}

/** The scan whose rows hold a good scan's tags. */
export const listOf = (r: Pick<ScanRow, 'id' | 'list_scan_id'>): number => r.list_scan_id ?? r.id;

export interface PolicyStateRow {
  policy: string;
  spec_hash: string;
  high_water: string | null;
  high_water_at: number | null;
  pending: string | null;
}

export const ms = (d: Date): number => d.getTime();
export const date = (n: number): Date => new Date(n);
export const optDate = (n: number | null): Date | null => (n === null ? null : new Date(n));

export function parseJson<T>(text: string | null, fallback: T): T {
  if (text === null) return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}

export function toScan(r: ScanRow): ScanRecord {
  return {
    id: r.id,
    repository: sharedNameKey(r.repository),
    image: r.image,
    startedAt: date(r.started_at),
    endedAt: optDate(r.ended_at),
    outcome: r.outcome,
    error: r.error,
    tagCount: r.tag_count,
    checksum: r.checksum,
    added: parseJson<string[]>(r.added, []),
    removed: parseJson<string[]>(r.removed, []),
    anomalies: parseJson<Anomaly[]>(r.anomalies, []),
    requests: r.requests,
  };
}

export function toPolicyState(r: PolicyStateRow): PolicyState {
  const p = parseJson<{ candidate: string; count: number; firstAt: number; lastAt: number } | null>(
    r.pending,
    null,
  );
  return {
    specHash: r.spec_hash,
    highWater: r.high_water,
    highWaterAt: optDate(r.high_water_at),
    pending: p
      ? { candidate: p.candidate, count: p.count, firstAt: date(p.firstAt), lastAt: date(p.lastAt) }
      : null,
  };
}

/** The `pending` column: JSON with times in milliseconds. */
export function pendingJson(state: PolicyState): string | null {
  return state.pending
    ? JSON.stringify({
        candidate: state.pending.candidate,
        count: state.pending.count,
        firstAt: ms(state.pending.firstAt),
        lastAt: ms(state.pending.lastAt),
      })
    : null;
}

/** Longer than any sane `spec.timeout`: a scan running this long was interrupted. */
export const STALE_RUNNING_SCAN_MS = 6 * 60 * 60_000;
export const INTERRUPTED = 'interrupted: pawl stopped before the scan finished';

/** What a limit argument means in SQL: a whole number, at least 0. */
export const limitOf = (n: number | undefined, fallback: number): number =>
  Math.max(0, Math.floor(n ?? fallback));

/** A `raw_responses` row joined with its scan. */
/** A `tags` row joined with its digest. */
export interface TagRow {
  tag: string;
  first_seen: number;
  last_seen: number;
  initial: number;
  digest: string | null;
}

export function toTagInfo(r: TagRow): TagInfo {
  return {
    firstSeen: date(r.first_seen),
    lastSeen: date(r.last_seen),
    digest: r.digest,
    initial: r.initial === 1,
  };
}

export interface RawResponsesRow {
  scan_id: number;
  body: string;
  truncated: number;
  started_at: number;
  outcome: ScanOutcome;
}

export function toRawResponses(r: RawResponsesRow): RawScanResponses {
  return {
    scanId: r.scan_id,
    startedAt: date(r.started_at),
    outcome: r.outcome,
    responses: parseJson<RecordedResponse[]>(r.body, []),
    truncated: r.truncated === 1,
  };
}

export interface SelectionRow {
  id: number;
  policy: string;
  at: number;
  candidate: string | null;
  error: string | null;
  unverified: string | null;
}

export function toSelection(r: SelectionRow): SelectionRecord {
  return {
    id: r.id,
    policy: r.policy,
    at: date(r.at),
    candidate: r.candidate,
    error: r.error,
    unverified: unverifiedOf(r.unverified),
  };
}

/** The stored `{tag, why}`; anything else (a hand-edited row) reads as none. */
function unverifiedOf(text: string | null): { tag: string; why: string } | null {
  if (text === null) return null;
  try {
    const v = JSON.parse(text) as { tag?: unknown; why?: unknown };
    return typeof v.tag === 'string' && typeof v.why === 'string' ? { tag: v.tag, why: v.why } : null;
  } catch {
    return null;
  }
}

export interface RunRow {
  id: number;
  at: number;
  kind: RunKind;
  ended_at: number | null;
  result: string | null;
}

export function toRun(r: RunRow): RunRecord {
  return {
    id: r.id,
    at: date(r.at),
    kind: r.kind,
    endedAt: optDate(r.ended_at),
    result: parseJson<unknown>(r.result, null),
  };
}

/** A `decisions` row joined with its run. */
/** A decision's columns, in the order every INSERT INTO decisions names them after its run (and id). */
export const DECISION_FIELDS = [
  'automation',
  'file',
  'line',
  'setter',
  'policy',
  'current',
  'candidate',
  'reason',
  'detail',
  'action',
] as const satisfies readonly (keyof Decision)[];

/** One decision's values in DECISION_FIELDS's order. */
export const decisionValues = (d: Decision): Decision[(typeof DECISION_FIELDS)[number]][] =>
  DECISION_FIELDS.map((k) => d[k]);

export type DecisionRow = Decision & { id: number; run_id: number; run_at: number; run_kind: RunKind };

export function toDecision(r: DecisionRow): DecisionRecord {
  return { id: r.id, runId: r.run_id, runKind: r.run_kind, at: date(r.run_at), ...decisionOf(r) };
}

/** The decision a row holds, without its id and run. */
export function decisionOf(r: DecisionRow): Decision {
  return {
    automation: r.automation,
    file: r.file,
    line: r.line,
    setter: r.setter,
    policy: sharedNameKey(r.policy),
    current: r.current,
    candidate: r.candidate,
    reason: r.reason,
    detail: r.detail,
    action: r.action,
  };
}

export interface EventRow {
  id: number;
  at: number;
  kind: string;
  policy: string | null;
  repository: string | null;
  detail: string;
}

export function toEvent(r: EventRow): EventRecord {
  return {
    id: r.id,
    at: date(r.at),
    kind: r.kind,
    policy: r.policy,
    repository: r.repository,
    detail: parseJson<Record<string, unknown>>(r.detail, {}),
  };
}
