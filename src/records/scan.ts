/** What a scan observed: the records scan writes, the store keeps and every layer above reads. */

/** Something unusual about a scan's tag list, next to the previous good scan of the same image. */
export type Anomaly =
  | { kind: 'empty' }
  /** Tags of the previous good scan now absent. `tags` holds every name, sorted. */
  | { kind: 'tags-missing'; count: number; tags: string[] }
  /** The count fell by at least COUNT_DROP_MIN_TAGS and at least COUNT_DROP_MIN_RATIO of the previous count. */
  | { kind: 'count-drop'; from: number; to: number }
  /**
   * The registry listed names that are not tags under the OCI grammar (`../../x`, `a b`, 300
   * characters, a newline); they were dropped. `examples` holds a few, JSON-quoted and cut short.
   */
  | { kind: 'invalid-tags'; count: number; examples: string[] };

/** What a scan's tag list changed since the previous good one (the rule is scan's: scan/diff.ts). */
export interface TagDiff {
  added: string[];
  removed: string[];
  anomalies: Anomaly[];
}

/** Compares a tag list with the previous good one (null: there is none). */
export type CompareTags = (previous: readonly string[] | null, current: readonly string[]) => TagDiff;

export type ScanOutcome = 'ok' | 'failed' | 'running';

export interface ScanRecord {
  id: number;
  /** The ImageRepository, `ns/name`. */
  repository: string;
  image: string;
  startedAt: Date;
  endedAt: Date | null;
  /** `running` until finishScan (or forever, if the process died mid-scan). */
  outcome: ScanOutcome;
  error: string | null;
  /** Null unless the scan was good. */
  tagCount: number | null;
  /** sha256 (hex) of the sorted tags joined by `\n`; null unless the scan was good. */
  checksum: string | null;
  added: string[];
  removed: string[];
  anomalies: Anomaly[];
  requests: number;
}

/** One recorded HTTP response of a tag listing, with credentials and tokens redacted. */
export interface RecordedResponse {
  method: string;
  url: string;
  status: number;
  headers: Record<string, string>;
  /** Truncated to the configured size. */
  body: string;
  at: string;
  durationMs: number;
}

export interface TagInfo {
  firstSeen: Date;
  lastSeen: Date;
  digest: string | null;
  /** Present in the first good scan of this repository's image: its first-seen time is unknown (SPEC §4). */
  initial: boolean;
}

export interface BuildTime {
  digest: string;
  created: Date;
  /** Which field it came from: `annotation`, `config`, `label`, `index-child`. */
  source: string;
}
