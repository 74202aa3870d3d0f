/**
 * What the state store records (SPEC §7). The store is a cache of observations: every
 * consumer must behave safely when it returns nothing (a deleted or fresh state directory).
 */
import type {
  Anomaly,
  BuildTime,
  CompareTags,
  Decision,
  DecisionRecord,
  EventRecord,
  StoredEvent,
  RecordedResponse,
  RunKind,
  ScanOutcome,
  ScanRecord,
  TagInfo,
} from '../records/index.js';

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
  /** `spec.verify`: the newest selected tag, when it failed verification, and why. */
  unverified: { tag: string; why: string } | null;
}

export interface RunRecord {
  id: number;
  at: Date;
  kind: RunKind;
  endedAt: Date | null;
  /** The run's result as `write({ finishRun })` stored it (parsed JSON); null while running. */
  result: unknown;
}

export interface DecisionFilter {
  policy?: string;
  runId?: number;
  /** Newest first; default 100. */
  limit?: number;
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

/**
 * Build times are immutable per digest; the store implements this so rescans fetch nothing.
 * Asynchronous like the store; a failed `set` only costs a later fetch, so callers may ignore it.
 */
export interface BuildTimeCache {
  get(digest: string): Promise<BuildTime | null | undefined>;
  set(digest: string, value: BuildTime | null): Promise<void>;
}

/**
 * Digests whose signatures a verifier accepted (`spec.verify`), keyed by the verifier's
 * fingerprint and the digest: a digest's content never changes, so a hit costs no registry
 * request. Only acceptances are kept: a signature may still arrive for an unsigned digest.
 */
export interface VerifiedCache {
  /** Who signed the digest (the key's name), or undefined when not verified before. */
  get(key: string): Promise<string | undefined>;
  set(key: string, signer: string, at: Date): Promise<void>;
}

/**
 * The newest finished scan and the newest good scan of one repository. Read only: the SQLite
 * store answers every caller with the same pairs it keeps (latest.ts).
 */
export interface LatestScans {
  /** The newest finished scan (ok or failed); null when there is none. */
  readonly finished: ScanRecord | null;
  /** The newest good scan; null when there is none. */
  readonly good: ScanRecord | null;
}

/** A pair as a store fills it from its rows, before it hands it out. */
/**
 * The latest scans of the repositories asked for, each name asked a key: a Map, or a SortedTable
 * (the SQLite store asked for names in order), which makes no hash table of them (issue 27).
 */
export type LatestScansOf = Pick<ReadonlyMap<string, LatestScans>, 'get' | 'size'>;

export type LatestScansDraft = { -readonly [K in keyof LatestScans]: LatestScans[K] };

export interface TagDigestWrite {
  repository: string;
  tag: string;
  digest: string;
  at: Date;
}

export interface SelectionWrite {
  policy: string;
  at: Date;
  candidate: string | null;
  error: string | null;
  /** `spec.verify`: the newest selected tag, when it failed verification, and why. */
  unverified?: { tag: string; why: string } | null;
}

/**
 * A batch of writes, applied by `Store.write` in one transaction: all of it is stored, or none.
 * A pass collects what it learnt and writes it in a few such batches instead of one statement
 * (and, on PostgreSQL, one round trip) per policy, decision and event. Order of application:
 * tag digests, policy states, selections, decisions, events, commit batches, then the run's end.
 */
export interface StoreWrite {
  tagDigests?: readonly TagDigestWrite[];
  policyStates?: readonly { policy: string; state: PolicyState }[];
  selections?: readonly SelectionWrite[];
  decisions?: { runId: number; decisions: readonly Decision[] };
  events?: readonly StoredEvent[];
  /** Commit batches opened (`openedAt`) or written or given up (null), by automation. */
  batches?: readonly { automation: string; openedAt: Date | null }[];
  finishRun?: { runId: number; result: unknown; endedAt: Date };
}

/** Which implementation a store is: `sqlite` (a file, one host) or `postgres` (shared by replicas). */
export type StoreKind = 'sqlite' | 'postgres';

/**
 * The state store (SPEC §7), one interface for both backends. Every method is asynchronous:
 * PostgreSQL answers over the network, and a synchronous facade would block the daemon's event
 * loop. SQLite's answers are immediate but come back the same way, so callers are written once.
 *
 * Errors: a backend that cannot be reached rejects with `StoreUnavailableError` (the daemon
 * pauses and reports not-ready); anything else is a `RuntimeError` naming the store.
 */
export interface Store {
  readonly kind: StoreKind;
  /**
   * Why writes do not land now (SQLite: the last commit failed, e.g. a full disk, and none has
   * succeeded since), or null. PostgreSQL's outages show through the coordinator's health.
   */
  unwritable?(): string | null;
  /** For messages: the SQLite file, or the PostgreSQL URL without its password. */
  readonly location: string;
  /** Commits what is written so far (SQLite groups writes), then closes. */
  close(): Promise<void>;
  /**
   * Makes every write so far durable and visible to other processes. SQLite commits writes in
   * groups, a few milliseconds after the first of them; PostgreSQL commits each write at once.
   */
  flush(): Promise<void>;
  /** The schema version the database holds. */
  schemaVersion(): Promise<number>;

  // scans
  /** Starts a scan (and marks scans of the repository left running by a crash as interrupted); returns its id. */
  beginScan(repository: string, image: string, at: Date): Promise<number>;
  /**
   * Records how a scan ended. `ok`: compares with the previous good scan of the same image (by
   * `compare`, the scanner's rule), stores the diff, anomalies and checksum and moves each tag's
   * last-seen time, all in one transaction; a list equal to the previous one writes no tag row
   * (docs/store.md, "Unchanged rescans"). `failed`: only the scan row changes; the previous good
   * data stays current.
   */
  finishScan(id: number, result: ScanResult, compare: CompareTags): Promise<ScanRecord>;
  /** Every repository (`ns/name`) with at least one scan, sorted. */
  knownRepositories(): Promise<string[]>;
  /** The newest scan of any outcome, running ones included. */
  lastScan(repository: string): Promise<ScanRecord | null>;
  /** The newest finished scan (ok or failed). */
  lastFinishedScan(repository: string): Promise<ScanRecord | null>;
  lastGoodScan(repository: string): Promise<ScanRecord | null>;
  /** `lastFinishedScan` and `lastGoodScan` of many repositories at once (every name is a key). */
  latestScans(repositories: readonly string[]): Promise<LatestScansOf>;
  /** Newest first. */
  scanHistory(repository: string, limit?: number): Promise<ScanRecord[]>;
  /** The tags of the last good scan, sorted; empty when there is none. */
  currentTags(repository: string): Promise<string[]>;
  /**
   * `currentTags` of many repositories at once (every name is a key). Each list's tags are read
   * once per store and kept while the list is current; the arrays are the caller's own.
   */
  currentTagsOf(repositories: readonly string[]): Promise<Map<string, string[]>>;
  /** What is known about a tag of the repository's current image (the image of its last good scan). */
  tagInfo(repository: string, tag: string): Promise<TagInfo | null>;
  /** Tag infos of the last good scan, sorted by tag; for tables. */
  currentTagInfos(repository: string): Promise<({ tag: string } & TagInfo)[]>;
  /** Recorded tag-list responses, newest scan first; only the last `rawScansKept` scans per repository have them. */
  rawResponses(repository: string, scanId?: number): Promise<RawScanResponses[]>;

  // build times
  /** Build times by digest: immutable, so a hit (or a remembered "no time") never goes back to the registry. */
  buildTimeCache(): BuildTimeCache;
  /** Signature verifications that passed, by verifier and digest (`spec.verify`). */
  verifiedCache(): VerifiedCache;

  // policies
  getPolicyState(policy: string): Promise<PolicyState | null>;
  /** `getPolicyState` of many policies at once; policies without a state are absent. */
  policyStates(policies: readonly string[]): Promise<Map<string, PolicyState>>;
  /** Newest first. */
  selectionHistory(policy: string, limit?: number): Promise<SelectionRecord[]>;
  /** The newest selection of each policy at once; policies never selected are absent. */
  latestSelections(policies: readonly string[]): Promise<Map<string, SelectionRecord>>;

  // runs, decisions, events
  beginRun(at: Date, kind: RunKind): Promise<number>;
  getRun(runId: number): Promise<RunRecord | null>;
  /** Newest first. */
  decisions(filter?: DecisionFilter): Promise<DecisionRecord[]>;
  /** Newest first. */
  events(filter?: EventFilter): Promise<EventRecord[]>;
  /** The newest event of `kind` of each policy at once; policies without one are absent. */
  latestEvents(kind: string, policies: readonly string[]): Promise<Map<string, EventRecord>>;

  // commit batches (spec.git.commit.batch)
  /** When each automation's open commit batch opened; automations without one are absent. */
  openBatches(automations: readonly string[]): Promise<Map<string, Date>>;

  /** Applies a batch of writes in one transaction (see `StoreWrite`). */
  write(batch: StoreWrite): Promise<void>;
}

/**
 * One job's queued webhook work, as `pawl serve` on SQLite keeps it (docs/state.md): written and
 * committed before the webhook is answered, deleted once a run has done it, read at start.
 */
export interface QueuedWork {
  /** The job key (`ImageUpdateAutomation/ns/name`, `ImageRepository/ns/name`). */
  key: string;
  repositories: string[];
  tags: string[];
  events: number;
  /** When the first of its events arrived, ms since the epoch. */
  firstAt: number;
  /** Bumped by each event: a run deletes only the version it took. */
  version: number;
}

/** The durable work queue of one `pawl serve` (the SQLite store; replicas queue in PostgreSQL). */
export interface WorkQueueStore {
  /** Writes each item (replacing the key's) and commits before it resolves. */
  putQueuedWork(items: readonly QueuedWork[]): Promise<void>;
  /** Removes a key's item (committed with the next group: redoing done work is harmless). */
  deleteQueuedWork(key: string): Promise<void>;
  /** Everything queued, oldest first. */
  queuedWork(): Promise<QueuedWork[]>;
  /**
   * Marks every scan still `running` as interrupted and returns their ids: called by the one
   * `pawl serve` holding the file's lock at start, when such a scan's process is gone.
   */
  interruptRunningScans(): Promise<number[]>;
}
