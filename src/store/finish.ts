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
export function runningScan(id: number, row: ScanRow | undefined, unsaved?: string | null): ScanRow {
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

/** The previous good scan of the same image, and its tags. */
export interface PreviousScan {
  id: number;
  tags: string[];
}

/** What a good scan's end writes. */
export interface GoodScan {
  /** The UPDATE's values: ended_at, then `goodScanColumns`. */
  columns: [number, ...ReturnType<typeof goodScanColumns>];
  /** When the tags were observed: the scan's start (the list may take minutes to page through). */
  at: number;
  /** Tags still listed move from this scan's rows (steady state: one statement); null on a first scan. */
  previous: number | null;
  /** Tags of the previous scan no longer listed: their rows stay behind. */
  removed: string[];
  /** Tags to insert in one statement: the whole list on a first scan, else the new ones. */
  added: string[];
  /** 1 on a first scan: its tags' first-seen times are unknown (SPEC §4). */
  initial: 0 | 1;
}

export function goodScan(
  row: ScanRow,
  tags: string[],
  previous: PreviousScan | null,
  result: ScanResult,
  compare: CompareTags,
): GoodScan {
  const diff = compare(previous?.tags ?? null, tags);
  return {
    columns: [ms(result.endedAt), ...goodScanColumns(tags, diff, result)],
    at: row.started_at,
    previous: previous?.id ?? null,
    removed: diff.removed,
    added: previous === null ? tags : diff.added,
    initial: previous === null ? 1 : 0,
  };
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
