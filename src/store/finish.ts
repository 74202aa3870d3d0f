/**
 * Finishing a scan, decided once for both backends (`Store.finishScan`): which scans may be
 * finished, the diff against the previous good scan and the good scan's columns, which tags move
 * and which are new, and which raw responses are kept. A backend reads the scan and the previous
 * good one, and runs its own SQL for what this decides.
 */
import type { CompareTags } from '../records/index.js';
import { RuntimeError } from '../util/index.js';
import { sanitizeResponses } from './redact.js';
import { goodScanColumns, ms, type ScanRow } from './rows.js';
import { sortTags } from './tags.js';
import type { ScanResult } from './types.js';

/**
 * The scan to finish: it must exist and still be running. `unsaved`: why writes did not land
 * lately (a full disk): the scan's start was among them, and that is the cause to report.
 */
export function runningScan<R extends ScanRow>(id: number, row: R | undefined, unsaved?: string | null): R {
  if (!row)
    throw new RuntimeError(unsaved ? `the scan could not be recorded: ${unsaved}` : `no scan with id ${id}`);
  if (row.outcome !== 'running') throw new RuntimeError(`scan ${id} has already finished (${row.outcome})`);
  return row;
}

/** A good scan's tags, sorted as stored; null for a failed scan. */
export function goodTags(id: number, result: ScanResult): string[] | null {
  if (result.outcome === 'failed') return null;
  if (!result.tags) throw new RuntimeError(`finishScan(${id}): a good scan needs its tags`);
  return sortTags(result.tags);
}

/** A failed scan's columns: ended_at, error, requests. Only the scan row changes. */
export function failedScanColumns(result: ScanResult): [number, string, number] {
  return [ms(result.endedAt), result.error ?? 'scan failed', result.requests];
}

/**
 * The previous good scan of the same image: its start, its checksum, and `list`, the scan whose
 * id its tags' rows carry (itself when its list changed; an earlier scan when it listed the same
 * tags). `tags` is read only when the new list differs from it (null otherwise): an unchanged
 * rescan reads and writes no tag row.
 */
export interface PreviousScan {
  id: number;
  startedAt: number;
  checksum: string | null;
  list: number;
  tags: string[] | null;
}

/** What a good scan's end writes. */
export interface GoodScan {
  /** The UPDATE's values: ended_at, then `goodScanColumns`, then list_scan_id. */
  columns: [number, ...ReturnType<typeof goodScanColumns>, number];
  /** When the tags were observed: the scan's start (the list may take minutes to page through). */
  at: number;
  /**
   * The list scan whose rows move to this scan (a changed list after a good scan); null on a
   * first scan, and when nothing moves (the same list: the scan points at the previous list).
   */
  previous: number | null;
  /** Tags of the previous scan no longer listed: their rows stay behind. */
  removed: string[];
  /**
   * When the rows left behind were last seen, if that is later than their rows say: the previous
   * good scan repeated its list scan's tags, so they were still listed at its start. Null: their
   * rows are right as they are.
   */
  removedSeen: number | null;
  /** Tags to insert in one statement: the whole list on a first scan, else the new ones. */
  added: string[];
  /** 1 on a first scan: its tags' first-seen times are unknown (SPEC §4). */
  initial: 0 | 1;
}

/**
 * The list a new good scan is compared with. `sameList`: the previous good scan's checksum is the
 * new list's, so the rows need not be read (a checksum is sha256 over the sorted list).
 */
export function sameList(previous: { checksum: string | null } | null, checksum: string): boolean {
  return previous !== null && previous.checksum === checksum;
}

/**
 * `checksum` is `tagListChecksum(tags)` (the backend needs it first, to know whether to read the
 * previous list); `previous.tags` must be there unless `sameList`. `superseded`: a good scan of
 * the image that started later has finished already (two processes scanned at once). This one
 * is recorded, compared with the scan before it, but the rows are the later scan's: it writes
 * none, or the later scan's current tags would be moved away from under it.
 */
export function goodScan(
  row: ScanRow,
  tags: string[],
  checksum: string,
  previous: PreviousScan | null,
  superseded: boolean,
  result: ScanResult,
  compare: CompareTags,
): GoodScan {
  const unchanged = previous !== null && sameList(previous, checksum);
  if (previous !== null && !unchanged && previous.tags === null)
    throw new RuntimeError(`finishScan(${row.id}): the previous list was not read`);
  // The same list is compared with itself: what the scanner's rule says of it (an empty list is
  // still an anomaly) without reading back rows that are known to hold it.
  const diff = compare(unchanged ? tags : (previous?.tags ?? null), tags);
  const columns: GoodScan['columns'] = [
    ms(result.endedAt),
    ...goodScanColumns(tags, diff, result, checksum),
    unchanged ? previous.list : row.id,
  ];
  const base = { columns, at: row.started_at, initial: previous === null ? 1 : 0 } as const;
  const none = { previous: null, removed: [], removedSeen: null, added: [] };
  if (superseded || unchanged) return { ...base, ...none };
  if (previous === null) return { ...base, ...none, added: tags };
  return {
    ...base,
    previous: previous.list,
    removed: diff.removed,
    removedSeen: previous.list !== previous.id && diff.removed.length > 0 ? previous.startedAt : null,
    added: diff.added,
  };
}

/** A finished scan's row, from the running row and what finishing it set (no read back). */
export function finishedRow(row: ScanRow, good: GoodScan): ScanRow {
  const [ended, count, checksum, added, removed, anomalies, requests, list] = good.columns;
  return {
    ...row,
    ended_at: ended,
    outcome: 'ok',
    error: null,
    tag_count: count,
    checksum,
    added,
    removed,
    anomalies,
    requests,
    list_scan_id: list,
  };
}

/** A failed scan's row, likewise. */
export function failedRow(row: ScanRow, [ended, error, requests]: [number, string, number]): ScanRow {
  return { ...row, ended_at: ended, outcome: 'failed', error, requests };
}

/**
 * A scan's raw responses as stored, redacted and bounded; null when there are none or none are
 * kept. After storing them, a backend drops those of all but the repository's last `kept` scans.
 */
export function rawToKeep(
  result: ScanResult,
  raw: { kept: number; bytes: number },
): { body: string; truncated: 0 | 1 } | null {
  if (!result.responses || result.responses.length === 0 || raw.kept <= 0) return null;
  const { body, truncated } = sanitizeResponses(result.responses, raw.bytes);
  return { body, truncated: truncated ? 1 : 0 };
}
