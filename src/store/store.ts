import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { RuntimeError, UsageError, errorMessage } from '../util/index.js';
import { tagListChecksum, sortTags } from './tags.js';
import { MIGRATIONS } from './migrations.js';
import { sanitizeResponses } from './redact.js';
import type {
  Anomaly,
  BuildTime,
  BuildTimeCache,
  CompareTags,
  RecordedResponse,
  Decision,
  DecisionFilter,
  DecisionRecord,
  EventFilter,
  EventRecord,
  PawlEvent,
  PolicyState,
  RawScanResponses,
  RunKind,
  RunRecord,
  ScanOutcome,
  ScanRecord,
  ScanResult,
  SelectionRecord,
  StoreOptions,
  TagInfo,
} from './types.js';

type Db = Database.Database;

export const DB_FILE = 'pawl.db';
export const SCHEMA_VERSION = MIGRATIONS.length;
/** Longer than any sane `spec.timeout`: a scan running this long was interrupted. */
export const STALE_RUNNING_SCAN_MS = 6 * 60 * 60_000;

/** Raw-response bounds from the environment (`PAWL_RAW_SCANS_KEPT`, `PAWL_RAW_BYTES_PER_SCAN`), for options not given. */
export function storeOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): StoreOptions {
  const read = (name: string, min: number): number | undefined => {
    const v = env[name];
    if (v === undefined || v === '') return undefined;
    if (!/^\d+$/.test(v) || Number(v) < min)
      throw new UsageError(`${name} must be a whole number of at least ${min}, not "${v}"`);
    return Number(v);
  };
  const out: StoreOptions = {};
  const kept = read('PAWL_RAW_SCANS_KEPT', 0);
  const bytes = read('PAWL_RAW_BYTES_PER_SCAN', 1024);
  if (kept !== undefined) out.rawScansKept = kept;
  if (bytes !== undefined) out.rawBytesPerScan = bytes;
  return out;
}

interface ScanRow {
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
}

const ms = (d: Date): number => d.getTime();
const date = (n: number): Date => new Date(n);
const optDate = (n: number | null): Date | null => (n === null ? null : new Date(n));

function parseJson<T>(text: string | null, fallback: T): T {
  if (text === null) return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}

function toScan(r: ScanRow): ScanRecord {
  return {
    id: r.id,
    repository: r.repository,
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

/**
 * Opens (creating when needed) `<stateDir>/pawl.db`, or an in-memory database for `:memory:`.
 * The database is a cache of observations (SPEC §7): deleting it is always safe.
 */
export function openStore(
  stateDir: string,
  options: StoreOptions = stateDir === ':memory:' ? {} : storeOptionsFromEnv(),
): Store {
  let file: string;
  if (stateDir === ':memory:') {
    file = ':memory:';
  } else {
    try {
      mkdirSync(stateDir, { recursive: true });
    } catch (err) {
      throw new RuntimeError(`cannot create the state directory ${stateDir}: ${errorMessage(err)}`);
    }
    file = join(stateDir, DB_FILE);
  }
  let db: Db | undefined;
  try {
    db = new Database(file);
    db.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000))}`);
    if (file !== ':memory:') db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    migrate(db, file);
  } catch (err) {
    db?.close();
    if (err instanceof RuntimeError || err instanceof UsageError) throw err;
    throw new RuntimeError(
      `cannot open the state database ${file === ':memory:' ? file : resolve(file)}: ${errorMessage(err)} ` +
        `(it only caches observations: moving it away and running again is safe)`,
    );
  }
  return new Store(db, options);
}

/**
 * Compiling SQL costs more than running these small statements: a pass over 500 repositories
 * spent ~9% of its CPU in `prepare`. Statements are cached by their text for the life of the
 * connection. (`pluck()` changes a statement's mode, so each SQL text must be used one way only;
 * the two plucked queries here are used nowhere else.)
 */
function withStatementCache(db: Db): Db {
  const cache = new Map<string, Database.Statement>();
  const prepare = db.prepare.bind(db);
  const cached = (sql: string): Database.Statement => {
    let st = cache.get(sql);
    if (!st) cache.set(sql, (st = prepare(sql)));
    return st;
  };
  db.prepare = cached as Db['prepare'];
  return db;
}

/** Applies each pending migration in its own immediate transaction, so two processes cannot both apply it. */
function migrate(db: Db, file: string): void {
  for (;;) {
    const applied = db
      .transaction((): boolean => {
        const version = db.pragma('user_version', { simple: true }) as number;
        if (version > MIGRATIONS.length) {
          throw new RuntimeError(
            `the state database ${file} has schema version ${version}, newer than this pawl understands (${MIGRATIONS.length}); ` +
              `upgrade pawl, or move the database away (it only caches observations)`,
          );
        }
        const step = MIGRATIONS[version];
        if (step === undefined) return false;
        db.exec(step);
        db.pragma(`user_version = ${version + 1}`);
        return true;
      })
      .immediate();
    if (!applied) return;
  }
}

export class Store {
  readonly #db: Db;
  readonly #rawScansKept: number;
  readonly #rawBytesPerScan: number;

  /** Use openStore. */
  constructor(db: Db, options: StoreOptions = {}) {
    this.#db = withStatementCache(db);
    this.#rawScansKept = Math.max(0, Math.floor(options.rawScansKept ?? 5));
    this.#rawBytesPerScan = Math.max(1024, Math.floor(options.rawBytesPerScan ?? 1024 * 1024));
  }

  close(): void {
    if (this.#db.open) this.#db.close();
  }

  /** The schema version in the file (for tests and `pawl doctor`-style output). */
  schemaVersion(): number {
    return this.#db.pragma('user_version', { simple: true }) as number;
  }

  // ---------------------------------------------------------------- scans

  beginScan(repository: string, image: string, at: Date): number {
    // A scan still "running" long after any timeout was cut off by a crash or a kill.
    this.#db
      .prepare(
        `UPDATE scans SET outcome = 'failed', ended_at = started_at, error = 'interrupted: pawl stopped before the scan finished'
         WHERE repository = ? AND outcome = 'running' AND started_at < ?`,
      )
      .run(repository, ms(at) - STALE_RUNNING_SCAN_MS);
    const r = this.#db
      .prepare('INSERT INTO scans (repository, image, started_at) VALUES (?, ?, ?)')
      .run(repository, image, ms(at));
    return Number(r.lastInsertRowid);
  }

  /**
   * Records how a scan ended. `ok`: compares with the previous good scan of the same image (by
   * `compare`, the scanner's rule), stores the diff, anomalies and checksum and moves each tag's
   * last-seen time, all in one transaction. `failed`: only the scan row changes; the previous good
   * data stays current.
   */
  finishScan(id: number, result: ScanResult, compare: CompareTags): ScanRecord {
    const db = this.#db;
    return db
      .transaction((): ScanRecord => {
        const row = db.prepare('SELECT * FROM scans WHERE id = ?').get(id) as ScanRow | undefined;
        if (!row) throw new RuntimeError(`no scan with id ${id}`);
        if (row.outcome !== 'running')
          throw new RuntimeError(`scan ${id} has already finished (${row.outcome})`);
        const endedAt = ms(result.endedAt);
        if (result.outcome === 'failed') {
          db.prepare(
            "UPDATE scans SET outcome = 'failed', ended_at = ?, error = ?, requests = ? WHERE id = ?",
          ).run(endedAt, result.error ?? 'scan failed', result.requests, id);
        } else {
          if (!result.tags) throw new RuntimeError(`finishScan(${id}): a good scan needs its tags`);
          const tags = sortTags(result.tags);
          const prev = this.#previousGood(row.repository, row.image, id);
          const previousTags = prev === null ? null : this.#tagsOfScan(row.repository, row.image, prev);
          const diff = compare(previousTags, tags);
          db.prepare(
            `UPDATE scans SET outcome = 'ok', ended_at = ?, error = NULL, tag_count = ?, checksum = ?,
             added = ?, removed = ?, anomalies = ?, requests = ? WHERE id = ?`,
          ).run(
            endedAt,
            tags.length,
            tagListChecksum(tags),
            JSON.stringify(diff.added),
            JSON.stringify(diff.removed),
            JSON.stringify([...(result.anomalies ?? []), ...diff.anomalies]),
            result.requests,
            id,
          );
          // The scan's start is when the tag was observed; the list may take minutes to page through.
          const at = row.started_at;
          // Steady state: one statement moves every tag still listed, then only new tags are written.
          if (prev !== null) {
            db.prepare(
              `UPDATE tags SET last_seen = ?, last_scan_id = ?
             WHERE repository = ? AND image = ? AND last_scan_id = ? AND tag NOT IN (SELECT value FROM json_each(?))`,
            ).run(at, id, row.repository, row.image, prev, JSON.stringify(diff.removed));
          }
          const upsert = db.prepare(
            `INSERT INTO tags (repository, image, tag, first_seen, last_seen, first_scan_id, last_scan_id, initial)
           VALUES (@repository, @image, @tag, @at, @at, @id, @id, @initial)
           ON CONFLICT (repository, image, tag) DO UPDATE SET last_seen = excluded.last_seen, last_scan_id = excluded.last_scan_id`,
          );
          const initial = prev === null ? 1 : 0;
          for (const tag of prev === null ? tags : diff.added) {
            upsert.run({ repository: row.repository, image: row.image, tag, at, id, initial });
          }
        }
        if (result.responses && result.responses.length > 0 && this.#rawScansKept > 0) {
          const { body, truncated } = sanitizeResponses(result.responses, this.#rawBytesPerScan);
          db.prepare(
            'INSERT OR REPLACE INTO raw_responses (scan_id, repository, body, truncated) VALUES (?, ?, ?, ?)',
          ).run(id, row.repository, body, truncated ? 1 : 0);
          db.prepare(
            `DELETE FROM raw_responses WHERE repository = ? AND scan_id NOT IN
             (SELECT scan_id FROM raw_responses WHERE repository = ? ORDER BY scan_id DESC LIMIT ?)`,
          ).run(row.repository, row.repository, this.#rawScansKept);
        }
        return toScan(db.prepare('SELECT * FROM scans WHERE id = ?').get(id) as ScanRow);
      })
      .immediate();
  }

  #previousGood(repository: string, image: string, before: number): number | null {
    const r = this.#db
      .prepare(
        "SELECT id FROM scans WHERE repository = ? AND image = ? AND outcome = 'ok' AND id < ? ORDER BY id DESC LIMIT 1",
      )
      .get(repository, image, before) as { id: number } | undefined;
    return r?.id ?? null;
  }

  #tagsOfScan(repository: string, image: string, scanId: number): string[] {
    const rows = this.#db
      .prepare('SELECT tag FROM tags WHERE repository = ? AND image = ? AND last_scan_id = ?')
      .pluck()
      .all(repository, image, scanId) as string[];
    return sortTags(rows);
  }

  /** Every repository (`ns/name`) with at least one scan, sorted. */
  knownRepositories(): string[] {
    return this.#db
      .prepare('SELECT DISTINCT repository FROM scans ORDER BY repository')
      .pluck()
      .all() as string[];
  }

  /** The newest scan of any outcome, running ones included. */
  lastScan(repository: string): ScanRecord | null {
    const r = this.#db
      .prepare('SELECT * FROM scans WHERE repository = ? ORDER BY id DESC LIMIT 1')
      .get(repository) as ScanRow | undefined;
    return r ? toScan(r) : null;
  }

  /** The newest finished scan (ok or failed). */
  lastFinishedScan(repository: string): ScanRecord | null {
    const r = this.#db
      .prepare("SELECT * FROM scans WHERE repository = ? AND outcome != 'running' ORDER BY id DESC LIMIT 1")
      .get(repository) as ScanRow | undefined;
    return r ? toScan(r) : null;
  }

  lastGoodScan(repository: string): ScanRecord | null {
    const r = this.#db
      .prepare("SELECT * FROM scans WHERE repository = ? AND outcome = 'ok' ORDER BY id DESC LIMIT 1")
      .get(repository) as ScanRow | undefined;
    return r ? toScan(r) : null;
  }

  getScan(id: number): ScanRecord | null {
    const r = this.#db.prepare('SELECT * FROM scans WHERE id = ?').get(id) as ScanRow | undefined;
    return r ? toScan(r) : null;
  }

  /** Newest first. */
  scanHistory(repository: string, limit = 20): ScanRecord[] {
    const rows = this.#db
      .prepare('SELECT * FROM scans WHERE repository = ? ORDER BY id DESC LIMIT ?')
      .all(repository, Math.max(0, Math.floor(limit))) as ScanRow[];
    return rows.map(toScan);
  }

  /** The tags of the last good scan, sorted; empty when there is none. */
  currentTags(repository: string): string[] {
    const last = this.lastGoodScan(repository);
    return last ? this.#tagsOfScan(repository, last.image, last.id) : [];
  }

  /** What is known about a tag of the repository's current image (the image of its last good scan). */
  tagInfo(repository: string, tag: string): TagInfo | null {
    const last = this.lastGoodScan(repository);
    if (!last) return null;
    const r = this.#db
      .prepare(
        `SELECT t.first_seen, t.last_seen, t.initial, d.digest FROM tags t
         LEFT JOIN tag_digests d ON d.repository = t.repository AND d.tag = t.tag
         WHERE t.repository = ? AND t.image = ? AND t.tag = ?`,
      )
      .get(repository, last.image, tag) as
      { first_seen: number; last_seen: number; initial: number; digest: string | null } | undefined;
    if (!r) return null;
    return {
      firstSeen: date(r.first_seen),
      lastSeen: date(r.last_seen),
      digest: r.digest,
      initial: r.initial === 1,
    };
  }

  /** Tag infos of the last good scan, sorted by tag; for tables. */
  currentTagInfos(repository: string): ({ tag: string } & TagInfo)[] {
    const last = this.lastGoodScan(repository);
    if (!last) return [];
    const rows = this.#db
      .prepare(
        `SELECT t.tag, t.first_seen, t.last_seen, t.initial, d.digest FROM tags t
         LEFT JOIN tag_digests d ON d.repository = t.repository AND d.tag = t.tag
         WHERE t.repository = ? AND t.image = ? AND t.last_scan_id = ?`,
      )
      .all(repository, last.image, last.id) as {
      tag: string;
      first_seen: number;
      last_seen: number;
      initial: number;
      digest: string | null;
    }[];
    const order = sortTags(rows.map((r) => r.tag));
    const byTag = new Map(rows.map((r) => [r.tag, r]));
    return order.map((tag) => {
      const r = byTag.get(tag)!;
      return {
        tag,
        firstSeen: date(r.first_seen),
        lastSeen: date(r.last_seen),
        digest: r.digest,
        initial: r.initial === 1,
      };
    });
  }

  /** Recorded tag-list responses, newest scan first; only the last `rawScansKept` scans per repository have them. */
  rawResponses(repository: string, scanId?: number): RawScanResponses[] {
    const rows = this.#db
      .prepare(
        `SELECT r.scan_id, r.body, r.truncated, s.started_at, s.outcome FROM raw_responses r
         JOIN scans s ON s.id = r.scan_id
         WHERE r.repository = ? AND (? IS NULL OR r.scan_id = ?) ORDER BY r.scan_id DESC`,
      )
      .all(repository, scanId ?? null, scanId ?? null) as {
      scan_id: number;
      body: string;
      truncated: number;
      started_at: number;
      outcome: ScanOutcome;
    }[];
    return rows.map((r) => ({
      scanId: r.scan_id,
      startedAt: date(r.started_at),
      outcome: r.outcome,
      responses: parseJson<RecordedResponse[]>(r.body, []),
      truncated: r.truncated === 1,
    }));
  }

  setTagDigest(repository: string, tag: string, digest: string, at: Date = new Date()): void {
    this.#db
      .prepare(
        `INSERT INTO tag_digests (repository, tag, digest, at) VALUES (?, ?, ?, ?)
         ON CONFLICT (repository, tag) DO UPDATE SET digest = excluded.digest, at = excluded.at`,
      )
      .run(repository, tag, digest, ms(at));
  }

  // ---------------------------------------------------------------- build times

  /** Build times by digest: immutable, so a hit (or a remembered "no time") never goes back to the registry. */
  buildTimeCache(): BuildTimeCache {
    const get = this.#db.prepare('SELECT created, source FROM build_times WHERE digest = ?');
    const set = this.#db.prepare(
      'INSERT OR REPLACE INTO build_times (digest, created, source) VALUES (?, ?, ?)',
    );
    return {
      get(digest: string): BuildTime | null | undefined {
        const r = get.get(digest) as { created: number | null; source: string | null } | undefined;
        if (!r) return undefined;
        if (r.created === null) return null;
        return { digest, created: date(r.created), source: r.source ?? 'unknown' };
      },
      set(digest: string, value: BuildTime | null): void {
        set.run(digest, value ? ms(value.created) : null, value ? value.source : null);
      },
    };
  }

  // ---------------------------------------------------------------- policies

  getPolicyState(policy: string): PolicyState | null {
    const r = this.#db.prepare('SELECT * FROM policy_state WHERE policy = ?').get(policy) as
      | { spec_hash: string; high_water: string | null; high_water_at: number | null; pending: string | null }
      | undefined;
    if (!r) return null;
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

  setPolicyState(policy: string, state: PolicyState): void {
    const pending = state.pending
      ? JSON.stringify({
          candidate: state.pending.candidate,
          count: state.pending.count,
          firstAt: ms(state.pending.firstAt),
          lastAt: ms(state.pending.lastAt),
        })
      : null;
    this.#db
      .prepare(
        `INSERT INTO policy_state (policy, spec_hash, high_water, high_water_at, pending) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (policy) DO UPDATE SET spec_hash = excluded.spec_hash, high_water = excluded.high_water,
           high_water_at = excluded.high_water_at, pending = excluded.pending`,
      )
      .run(
        policy,
        state.specHash,
        state.highWater,
        state.highWaterAt ? ms(state.highWaterAt) : null,
        pending,
      );
  }

  recordSelection(policy: string, at: Date, candidate: string | null, error: string | null): number {
    const r = this.#db
      .prepare('INSERT INTO selections (policy, at, candidate, error) VALUES (?, ?, ?, ?)')
      .run(policy, ms(at), candidate, error);
    return Number(r.lastInsertRowid);
  }

  /** Newest first. */
  selectionHistory(policy: string, limit = 20): SelectionRecord[] {
    const rows = this.#db
      .prepare('SELECT * FROM selections WHERE policy = ? ORDER BY id DESC LIMIT ?')
      .all(policy, Math.max(0, Math.floor(limit))) as {
      id: number;
      policy: string;
      at: number;
      candidate: string | null;
      error: string | null;
    }[];
    return rows.map((r) => ({
      id: r.id,
      policy: r.policy,
      at: date(r.at),
      candidate: r.candidate,
      error: r.error,
    }));
  }

  // ---------------------------------------------------------------- runs and decisions

  beginRun(at: Date, kind: RunKind): number {
    const r = this.#db.prepare('INSERT INTO runs (at, kind) VALUES (?, ?)').run(ms(at), kind);
    return Number(r.lastInsertRowid);
  }

  recordDecision(runId: number, d: Decision): number {
    const r = this.#db
      .prepare(
        `INSERT INTO decisions (run_id, automation, file, line, setter, policy, current, candidate, reason, detail, action)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        runId,
        d.automation,
        d.file,
        d.line,
        d.setter,
        d.policy,
        d.current,
        d.candidate,
        d.reason,
        d.detail,
        d.action,
      );
    return Number(r.lastInsertRowid);
  }

  finishRun(runId: number, result: unknown, endedAt: Date = new Date()): void {
    this.#db
      .prepare('UPDATE runs SET ended_at = ?, result = ? WHERE id = ?')
      .run(ms(endedAt), JSON.stringify(result ?? null), runId);
  }

  getRun(runId: number): RunRecord | null {
    const r = this.#db.prepare('SELECT * FROM runs WHERE id = ?').get(runId) as
      { id: number; at: number; kind: RunKind; ended_at: number | null; result: string | null } | undefined;
    if (!r) return null;
    return {
      id: r.id,
      at: date(r.at),
      kind: r.kind,
      endedAt: optDate(r.ended_at),
      result: parseJson<unknown>(r.result, null),
    };
  }

  /** Newest first. */
  decisions(filter: DecisionFilter = {}): DecisionRecord[] {
    const rows = this.#db
      .prepare(
        `SELECT d.*, r.at AS run_at, r.kind AS run_kind FROM decisions d JOIN runs r ON r.id = d.run_id
         WHERE (@policy IS NULL OR d.policy = @policy) AND (@runId IS NULL OR d.run_id = @runId)
         ORDER BY d.id DESC LIMIT @limit`,
      )
      .all({
        policy: filter.policy ?? null,
        runId: filter.runId ?? null,
        limit: Math.max(0, Math.floor(filter.limit ?? 100)),
      }) as (Decision & { id: number; run_id: number; run_at: number; run_kind: RunKind })[];
    return rows.map((r) => ({
      id: r.id,
      runId: r.run_id,
      runKind: r.run_kind,
      at: date(r.run_at),
      automation: r.automation,
      file: r.file,
      line: r.line,
      setter: r.setter,
      policy: r.policy,
      current: r.current,
      candidate: r.candidate,
      reason: r.reason,
      detail: r.detail,
      action: r.action,
    }));
  }

  // ---------------------------------------------------------------- events

  recordEvent(e: PawlEvent): number {
    const r = this.#db
      .prepare('INSERT INTO events (at, kind, policy, repository, detail) VALUES (?, ?, ?, ?, ?)')
      .run(ms(e.at), e.kind, e.policy ?? null, e.repository ?? null, JSON.stringify(e.detail ?? {}));
    return Number(r.lastInsertRowid);
  }

  /** Newest first. */
  events(filter: EventFilter = {}): EventRecord[] {
    const rows = this.#db
      .prepare(
        `SELECT * FROM events WHERE (@kind IS NULL OR kind = @kind) AND (@policy IS NULL OR policy = @policy)
           AND (@repository IS NULL OR repository = @repository) AND (@since IS NULL OR at >= @since)
         ORDER BY id DESC LIMIT @limit`,
      )
      .all({
        kind: filter.kind ?? null,
        policy: filter.policy ?? null,
        repository: filter.repository ?? null,
        since: filter.since ? ms(filter.since) : null,
        limit: Math.max(0, Math.floor(filter.limit ?? 100)),
      }) as {
      id: number;
      at: number;
      kind: string;
      policy: string | null;
      repository: string | null;
      detail: string;
    }[];
    return rows.map((r) => ({
      id: r.id,
      at: date(r.at),
      kind: r.kind,
      policy: r.policy,
      repository: r.repository,
      detail: parseJson<Record<string, unknown>>(r.detail, {}),
    }));
  }
}
