/**
 * What the state store records (SPEC §7). The store is a cache of observations: every
 * consumer must behave safely when it returns nothing (a deleted or fresh state directory).
 */

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

export interface ScanResult {
  outcome: 'ok' | 'failed';
  error?: string;
  /** Required when outcome is `ok`. */
  tags?: string[];
  /** Anomalies the scanner saw itself (e.g. `invalid-tags`), recorded beside the diff's. */
  anomalies?: Anomaly[];
  requests: number;
  /** Recorded tag-list responses (already redacted by the client); failed scans may carry some too. */
  responses?: RecordedResponse[];
  endedAt: Date;
}

export interface TagInfo {
  firstSeen: Date;
  lastSeen: Date;
  digest: string | null;
  /** Present in the first good scan of this repository's image: its first-seen time is unknown (SPEC §4). */
  initial: boolean;
}

export interface RawScanResponses {
  scanId: number;
  startedAt: Date;
  outcome: ScanOutcome;
  responses: RecordedResponse[];
  /** Some responses or bodies were cut to keep the store within its byte bound. */
  truncated: boolean;
}

export interface PendingRegression {
  candidate: string;
  count: number;
  firstAt: Date;
  lastAt: Date;
}

export interface PolicyState {
  specHash: string;
  highWater: string | null;
  highWaterAt: Date | null;
  pending: PendingRegression | null;
}

export interface SelectionRecord {
  id: number;
  policy: string;
  at: Date;
  candidate: string | null;
  error: string | null;
}

export type RunKind = 'run' | 'rollback' | 'release' | 'dry-run';

export interface RunRecord {
  id: number;
  at: Date;
  kind: RunKind;
  endedAt: Date | null;
  /** Whatever finishRun stored (parsed JSON); null while running. */
  result: unknown;
}

/**
 * One marker's decision in one run: the one record the guard decides (action, reason, detail),
 * `pawl run` reports (its change and kept rows are projections of it) and the store keeps.
 */
export interface Decision<R extends string = string> {
  automation: string;
  /** Relative to the repository root. */
  file: string;
  line: number;
  /** The marker's setter, `ns:name[:field]`. */
  setter: string;
  /** `ns/name` of the policy. */
  policy: string;
  /** The value in the file before the run. */
  current: string;
  /** `write`: the value written; `keep`: the policy's candidate tag (null when there is none). */
  candidate: string | null;
  reason: R;
  /** One sentence for a person. */
  detail: string;
  action: 'write' | 'keep';
}

export interface DecisionRecord extends Decision {
  id: number;
  runId: number;
  runKind: RunKind;
  /** When the run began. */
  at: Date;
}

export interface DecisionFilter {
  policy?: string;
  runId?: number;
  /** Newest first; default 100. */
  limit?: number;
}

export type EventKind =
  'downgrade-blocked' | 'stale-scan' | 'regression-accepted' | 'candidate-missing' | 'pin' | (string & {});

export interface PawlEvent {
  at: Date;
  kind: EventKind;
  policy?: string;
  repository?: string;
  detail: Record<string, unknown>;
}

export interface EventRecord {
  id: number;
  at: Date;
  kind: string;
  policy: string | null;
  repository: string | null;
  detail: Record<string, unknown>;
}

export interface EventFilter {
  kind?: string;
  policy?: string;
  repository?: string;
  /** Only events at or after this time. */
  since?: Date;
  /** Newest first; default 100. */
  limit?: number;
}

export interface StoreOptions {
  /** Scans per repository whose raw responses are kept (default 5). */
  rawScansKept?: number;
  /** Upper bound on the stored raw responses of one scan, in bytes of JSON (default 1 MiB). */
  rawBytesPerScan?: number;
  /** SQLite busy timeout in ms, for a CLI next to `pawl serve` (default 5000). */
  busyTimeoutMs?: number;
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

export interface BuildTime {
  digest: string;
  created: Date;
  /** Which field it came from: `annotation`, `config`, `label`, `index-child`. */
  source: string;
}

/** Build times are immutable per digest; the store implements this so rescans fetch nothing. */
export interface BuildTimeCache {
  get(digest: string): BuildTime | null | undefined;
  set(digest: string, value: BuildTime | null): void;
}
