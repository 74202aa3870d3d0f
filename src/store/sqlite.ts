/** The SQLite store: one file in the state directory, for one host (better-sqlite3, synchronous underneath). */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { RuntimeError, UsageError, errorMessage } from '../util/index.js';
import { sortTags } from './tags.js';
import { MIGRATIONS } from './migrations.js';
import { sanitizeResponses } from './redact.js';
import { rawBounds, storeOptionsFromEnv } from './options.js';
import {
  INTERRUPTED,
  STALE_RUNNING_SCAN_MS,
  date,
  goodScanColumns,
  limitOf,
  ms,
  pendingJson,
  toPolicyState,
  toDecision,
  toEvent,
  toRawResponses,
  toRun,
  toScan,
  toSelection,
  toTagInfo,
  type DecisionRow,
  type EventRow,
  type PolicyStateRow,
  type RawResponsesRow,
  type RunRow,
  type ScanRow,
  type SelectionRow,
  type TagRow,
} from './rows.js';
import type {
  BuildTime,
  BuildTimeCache,
  CompareTags,
  Decision,
  DecisionFilter,
  DecisionRecord,
  EventFilter,
  EventRecord,
  LatestScans,
  PawlEvent,
  PolicyState,
  RawScanResponses,
  RunKind,
  RunRecord,
  ScanRecord,
  ScanResult,
  SelectionRecord,
  Store,
  StoreOptions,
  StoreWrite,
  TagInfo,
  QueuedWork,
  WorkQueueStore,
} from './types.js';

type Db = Database.Database;

export const DB_FILE = 'pawl.db';
export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * Opens (creating when needed) `<stateDir>/pawl.db`, or an in-memory database for `:memory:`.
 * The database is a cache of observations (SPEC §7): deleting it is always safe.
 */
export function openSqliteStore(
  stateDir: string,
  options: StoreOptions = stateDir === ':memory:' ? {} : storeOptionsFromEnv(),
): SqliteStore {
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
  return openSqliteFile(file, options);
}

/** Opens (creating when needed) one SQLite file; `--store FILE` names it directly. */
export function openSqliteFile(file: string, options: StoreOptions = {}): SqliteStore {
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
  return new SqliteStore(db, file === ':memory:' ? file : resolve(file), options);
}

/**
 * Compiling SQL costs more than running these small statements: a pass over 500 repositories
 * spent ~9% of its CPU in `prepare`. Statements are cached by their text for the life of the
 * connection. (`pluck()` changes a statement's mode, so each SQL text must be used one way only;
 * the plucked queries here are used nowhere else.)
 */
function withStatementCache(db: Db, beforeUse: () => void): Db {
  const cache = new Map<string, Database.Statement>();
  const prepare = db.prepare.bind(db);
  const cached = (sql: string): Database.Statement => {
    beforeUse();
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

/**
 * How long the first write of a group waits for others before they are committed together.
 * Each SQLite commit appends its pages to the WAL: a pass over 500 repositories made about
 * 1,500 commits (a scan's start and end, each selection and run record) and spent a tenth of
 * its CPU in them. Grouped, the same writes take a few dozen commits.
 */
const GROUP_COMMIT_MS = 20;

/**
 * The stores of this process with a group open, by file. Two handles on one file in one process
 * (tests; a library caller) would otherwise not see each other's writes, and the second writer
 * would block the thread in SQLite's busy wait while the timer that ends the first group could
 * not run: each handle commits the others' groups before it touches the file.
 */
const openGroups = new Map<string, Set<SqliteStore>>();

/**
 * The SQLite store. Every method runs synchronously inside and resolves at once, so a method's
 * statements never interleave with another caller's.
 *
 * Writes are grouped: the first opens an immediate transaction, and each write runs inside it as
 * a savepoint (all of it or none of it, as before); the group is committed `GROUP_COMMIT_MS`
 * later, by `flush`, by `close`, or when the process exits. Reads on this connection see the
 * group at once; another process sees it once committed. The database only caches observations
 * (SPEC §7), so a crash loses at most the last few milliseconds of them.
 */
export class SqliteStore implements Store, WorkQueueStore {
  readonly kind = 'sqlite' as const;
  readonly #db: Db;
  readonly #raw: { kept: number; bytes: number };
  #group: NodeJS.Timeout | undefined;
  /** A group's commit that failed in its timer, reported by the next write or flush. */
  #lost: Error | undefined;
  readonly #commitOnExit = (): void => {
    try {
      this.#commit();
    } catch (err) {
      // Nothing is left to report it to: say it on the way out.
      process.stderr.write(`pawl: ${errorMessage(err)}\n`);
    }
  };

  /** Use openSqliteStore. */
  constructor(
    db: Db,
    readonly location: string,
    options: StoreOptions = {},
  ) {
    this.#db = withStatementCache(db, () => this.#commitOthers());
    this.#raw = rawBounds(options);
  }

  #commitOthers(): void {
    const open = openGroups.get(this.location);
    if (open === undefined) return;
    for (const other of open) if (other !== this) other.#commitQuietly();
  }

  #commitQuietly(): void {
    try {
      this.#commit();
    } catch (err) {
      this.#lost = err instanceof Error ? err : new Error(String(err));
    }
  }

  /** Runs `fn` as one all-or-nothing write inside the open group (opening one if needed). */
  #write<T>(fn: () => T): T {
    this.#throwLost();
    if (this.#group === undefined) {
      this.#commitOthers();
      this.#db.exec('BEGIN IMMEDIATE');
      this.#group = setTimeout(() => this.#commitQuietly(), GROUP_COMMIT_MS);
      process.once('exit', this.#commitOnExit);
      if (this.location !== ':memory:') {
        const open = openGroups.get(this.location) ?? new Set();
        openGroups.set(this.location, open.add(this));
      }
    }
    return this.#db.transaction(fn)();
  }

  #commit(): void {
    if (this.#group === undefined) return;
    clearTimeout(this.#group);
    this.#group = undefined;
    process.removeListener('exit', this.#commitOnExit);
    const open = openGroups.get(this.location);
    if (open?.delete(this) && open.size === 0) openGroups.delete(this.location);
    if (!this.#db.open || !this.#db.inTransaction) return;
    try {
      this.#db.exec('COMMIT');
    } catch (err) {
      if (this.#db.inTransaction) this.#db.exec('ROLLBACK');
      throw new RuntimeError(
        `cannot commit to the state database ${this.location}: ${errorMessage(err)} (the writes of the last ${GROUP_COMMIT_MS} ms are lost; the next pass observes again)`,
      );
    }
  }

  #throwLost(): void {
    const lost = this.#lost;
    if (lost === undefined) return;
    this.#lost = undefined;
    throw lost;
  }

  async flush(): Promise<void> {
    this.#commit();
    this.#throwLost();
  }

  async close(): Promise<void> {
    try {
      this.#commit();
    } finally {
      if (this.#db.open) this.#db.close();
    }
  }

  async schemaVersion(): Promise<number> {
    return this.#db.pragma('user_version', { simple: true }) as number;
  }

  // ---------------------------------------------------------------- scans

  async beginScan(repository: string, image: string, at: Date): Promise<number> {
    return this.#write(() => this.#beginScan(repository, image, at));
  }

  #beginScan(repository: string, image: string, at: Date): number {
    // A scan still "running" long after any timeout was cut off by a crash or a kill.
    this.#db
      .prepare(
        `UPDATE scans SET outcome = 'failed', ended_at = started_at, error = ?
         WHERE repository = ? AND outcome = 'running' AND started_at < ?`,
      )
      .run(INTERRUPTED, repository, ms(at) - STALE_RUNNING_SCAN_MS);
    const r = this.#db
      .prepare('INSERT INTO scans (repository, image, started_at) VALUES (?, ?, ?)')
      .run(repository, image, ms(at));
    return Number(r.lastInsertRowid);
  }

  async finishScan(id: number, result: ScanResult, compare: CompareTags): Promise<ScanRecord> {
    const db = this.#db;
    return this.#write((): ScanRecord => {
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
        ).run(endedAt, ...goodScanColumns(tags, diff, result), id);
        // The scan's start is when the tag was observed; the list may take minutes to page through.
        const at = row.started_at;
        // Steady state: one statement moves every tag still listed, then only new tags are written.
        if (prev !== null) {
          db.prepare(
            `UPDATE tags SET last_seen = ?, last_scan_id = ?
             WHERE repository = ? AND image = ? AND last_scan_id = ? AND tag NOT IN (SELECT value FROM json_each(?))`,
          ).run(at, id, row.repository, row.image, prev, JSON.stringify(diff.removed));
        }
        // Every new tag in one statement: a first scan writes its whole list.
        const added = prev === null ? tags : diff.added;
        if (added.length > 0)
          db.prepare(
            `INSERT INTO tags (repository, image, tag, first_seen, last_seen, first_scan_id, last_scan_id, initial)
             SELECT ?, ?, value, ?, ?, ?, ?, ? FROM json_each(?) WHERE true
             ON CONFLICT (repository, image, tag) DO UPDATE SET last_seen = excluded.last_seen, last_scan_id = excluded.last_scan_id`,
          ).run(row.repository, row.image, at, at, id, id, prev === null ? 1 : 0, JSON.stringify(added));
      }
      if (result.responses && result.responses.length > 0 && this.#raw.kept > 0) {
        const { body, truncated } = sanitizeResponses(result.responses, this.#raw.bytes);
        db.prepare(
          'INSERT OR REPLACE INTO raw_responses (scan_id, repository, body, truncated) VALUES (?, ?, ?, ?)',
        ).run(id, row.repository, body, truncated ? 1 : 0);
        db.prepare(
          `DELETE FROM raw_responses WHERE repository = ? AND scan_id NOT IN
             (SELECT scan_id FROM raw_responses WHERE repository = ? ORDER BY scan_id DESC LIMIT ?)`,
        ).run(row.repository, row.repository, this.#raw.kept);
      }
      return toScan(db.prepare('SELECT * FROM scans WHERE id = ?').get(id) as ScanRow);
    });
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

  #lastScan(repository: string): ScanRecord | null {
    const r = this.#db
      .prepare('SELECT * FROM scans WHERE repository = ? ORDER BY id DESC LIMIT 1')
      .get(repository) as ScanRow | undefined;
    return r ? toScan(r) : null;
  }

  #lastFinished(repository: string): ScanRecord | null {
    const r = this.#db
      .prepare("SELECT * FROM scans WHERE repository = ? AND outcome != 'running' ORDER BY id DESC LIMIT 1")
      .get(repository) as ScanRow | undefined;
    return r ? toScan(r) : null;
  }

  #lastGood(repository: string): ScanRecord | null {
    const r = this.#db
      .prepare("SELECT * FROM scans WHERE repository = ? AND outcome = 'ok' ORDER BY id DESC LIMIT 1")
      .get(repository) as ScanRow | undefined;
    return r ? toScan(r) : null;
  }

  #currentTags(repository: string): string[] {
    const last = this.#lastGood(repository);
    return last ? this.#tagsOfScan(repository, last.image, last.id) : [];
  }

  async knownRepositories(): Promise<string[]> {
    return this.#db
      .prepare('SELECT DISTINCT repository FROM scans ORDER BY repository')
      .pluck()
      .all() as string[];
  }

  async lastScan(repository: string): Promise<ScanRecord | null> {
    return this.#lastScan(repository);
  }

  async lastFinishedScan(repository: string): Promise<ScanRecord | null> {
    return this.#lastFinished(repository);
  }

  async lastGoodScan(repository: string): Promise<ScanRecord | null> {
    return this.#lastGood(repository);
  }

  async latestScans(repositories: readonly string[]): Promise<Map<string, LatestScans>> {
    // One statement for the whole list: a pass asks for 500 repositories at once, and a call
    // into SQLite costs more than the index lookups it makes.
    const rows = this.#db
      .prepare(
        `WITH wanted AS (
           SELECT value AS name,
             (SELECT id FROM scans WHERE repository = value AND outcome != 'running' ORDER BY id DESC LIMIT 1) AS finished_id,
             (SELECT id FROM scans WHERE repository = value AND outcome = 'ok' ORDER BY id DESC LIMIT 1) AS good_id
           FROM json_each(?))
         SELECT wanted.name, wanted.finished_id, wanted.good_id, s.* FROM wanted
         JOIN scans s ON s.id = wanted.finished_id OR s.id = wanted.good_id`,
      )
      .all(JSON.stringify(repositories)) as (ScanRow & {
      name: string;
      finished_id: number | null;
      good_id: number | null;
    })[];
    const out = new Map<string, LatestScans>(repositories.map((r) => [r, { finished: null, good: null }]));
    for (const row of rows) {
      const latest = out.get(row.name)!;
      const scan = toScan(row);
      if (row.id === row.finished_id) latest.finished = scan;
      if (row.id === row.good_id) latest.good = scan;
    }
    return out;
  }

  async getScan(id: number): Promise<ScanRecord | null> {
    const r = this.#db.prepare('SELECT * FROM scans WHERE id = ?').get(id) as ScanRow | undefined;
    return r ? toScan(r) : null;
  }

  async scanHistory(repository: string, limit = 20): Promise<ScanRecord[]> {
    const rows = this.#db
      .prepare('SELECT * FROM scans WHERE repository = ? ORDER BY id DESC LIMIT ?')
      .all(repository, limitOf(limit, 20)) as ScanRow[];
    return rows.map(toScan);
  }

  async currentTags(repository: string): Promise<string[]> {
    return this.#currentTags(repository);
  }

  async currentTagsOf(repositories: readonly string[]): Promise<Map<string, string[]>> {
    const rows = this.#db
      .prepare(
        `WITH good AS (
           SELECT value AS name,
             (SELECT id FROM scans WHERE repository = value AND outcome = 'ok' ORDER BY id DESC LIMIT 1) AS id
           FROM json_each(?))
         SELECT good.name, t.tag FROM good
         JOIN scans s ON s.id = good.id
         JOIN tags t ON t.repository = s.repository AND t.image = s.image AND t.last_scan_id = s.id`,
      )
      .all(JSON.stringify(repositories)) as { name: string; tag: string }[];
    const byRepo = new Map<string, string[]>(repositories.map((r) => [r, []]));
    for (const r of rows) byRepo.get(r.name)!.push(r.tag);
    for (const [r, tags] of byRepo) byRepo.set(r, sortTags(tags));
    return byRepo;
  }

  async tagInfo(repository: string, tag: string): Promise<TagInfo | null> {
    const last = this.#lastGood(repository);
    if (!last) return null;
    const r = this.#db
      .prepare(
        `SELECT t.tag, t.first_seen, t.last_seen, t.initial, d.digest FROM tags t
         LEFT JOIN tag_digests d ON d.repository = t.repository AND d.tag = t.tag
         WHERE t.repository = ? AND t.image = ? AND t.tag = ?`,
      )
      .get(repository, last.image, tag) as TagRow | undefined;
    return r ? toTagInfo(r) : null;
  }

  async currentTagInfos(repository: string): Promise<({ tag: string } & TagInfo)[]> {
    const last = this.#lastGood(repository);
    if (!last) return [];
    const rows = this.#db
      .prepare(
        `SELECT t.tag, t.first_seen, t.last_seen, t.initial, d.digest FROM tags t
         LEFT JOIN tag_digests d ON d.repository = t.repository AND d.tag = t.tag
         WHERE t.repository = ? AND t.image = ? AND t.last_scan_id = ?`,
      )
      .all(repository, last.image, last.id) as TagRow[];
    const byTag = new Map(rows.map((r) => [r.tag, r]));
    return sortTags(byTag.keys()).map((tag) => ({ tag, ...toTagInfo(byTag.get(tag)!) }));
  }

  async rawResponses(repository: string, scanId?: number): Promise<RawScanResponses[]> {
    const rows = this.#db
      .prepare(
        `SELECT r.scan_id, r.body, r.truncated, s.started_at, s.outcome FROM raw_responses r
         JOIN scans s ON s.id = r.scan_id
         WHERE r.repository = ? AND (? IS NULL OR r.scan_id = ?) ORDER BY r.scan_id DESC`,
      )
      .all(repository, scanId ?? null, scanId ?? null) as RawResponsesRow[];
    return rows.map(toRawResponses);
  }

  async setTagDigest(repository: string, tag: string, digest: string, at: Date = new Date()): Promise<void> {
    this.#write(() => this.#setTagDigest(repository, tag, digest, at));
  }

  #setTagDigest(repository: string, tag: string, digest: string, at: Date): void {
    this.#db
      .prepare(
        `INSERT INTO tag_digests (repository, tag, digest, at) VALUES (?, ?, ?, ?)
         ON CONFLICT (repository, tag) DO UPDATE SET digest = excluded.digest, at = excluded.at`,
      )
      .run(repository, tag, digest, ms(at));
  }

  // ---------------------------------------------------------------- build times

  buildTimeCache(): BuildTimeCache {
    const get = this.#db.prepare('SELECT created, source FROM build_times WHERE digest = ?');
    const set = this.#db.prepare(
      'INSERT OR REPLACE INTO build_times (digest, created, source) VALUES (?, ?, ?)',
    );
    const write = <T>(fn: () => T): T => this.#write(fn);
    return {
      async get(digest: string): Promise<BuildTime | null | undefined> {
        const r = get.get(digest) as { created: number | null; source: string | null } | undefined;
        if (!r) return undefined;
        if (r.created === null) return null;
        return { digest, created: date(r.created), source: r.source ?? 'unknown' };
      },
      async set(digest: string, value: BuildTime | null): Promise<void> {
        write(() => set.run(digest, value ? ms(value.created) : null, value ? value.source : null));
      },
    };
  }

  // ---------------------------------------------------------------- policies

  #policyState(policy: string): PolicyState | null {
    const r = this.#db.prepare('SELECT * FROM policy_state WHERE policy = ?').get(policy) as
      PolicyStateRow | undefined;
    return r ? toPolicyState(r) : null;
  }

  async getPolicyState(policy: string): Promise<PolicyState | null> {
    return this.#policyState(policy);
  }

  async policyStates(policies: readonly string[]): Promise<Map<string, PolicyState>> {
    const rows = this.#db
      .prepare('SELECT p.* FROM json_each(?) j JOIN policy_state p ON p.policy = j.value')
      .all(JSON.stringify(policies)) as PolicyStateRow[];
    return new Map(rows.map((r) => [r.policy, toPolicyState(r)]));
  }

  async setPolicyState(policy: string, state: PolicyState): Promise<void> {
    this.#write(() => this.#setPolicyState(policy, state));
  }

  #setPolicyState(policy: string, state: PolicyState): void {
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
        pendingJson(state),
      );
  }

  async recordSelection(
    policy: string,
    at: Date,
    candidate: string | null,
    error: string | null,
  ): Promise<number> {
    return this.#write(() => this.#recordSelection(policy, at, candidate, error));
  }

  #recordSelection(policy: string, at: Date, candidate: string | null, error: string | null): number {
    const r = this.#db
      .prepare('INSERT INTO selections (policy, at, candidate, error) VALUES (?, ?, ?, ?)')
      .run(policy, ms(at), candidate, error);
    return Number(r.lastInsertRowid);
  }

  async selectionHistory(policy: string, limit = 20): Promise<SelectionRecord[]> {
    const rows = this.#db
      .prepare('SELECT * FROM selections WHERE policy = ? ORDER BY id DESC LIMIT ?')
      .all(policy, limitOf(limit, 20)) as SelectionRow[];
    return rows.map(toSelection);
  }

  async latestSelections(policies: readonly string[]): Promise<Map<string, SelectionRecord>> {
    const out = new Map<string, SelectionRecord>();
    for (const p of policies) {
      const [newest] = await this.selectionHistory(p, 1);
      if (newest) out.set(p, newest);
    }
    return out;
  }

  // ---------------------------------------------------------------- runs and decisions

  async beginRun(at: Date, kind: RunKind): Promise<number> {
    const r = this.#write(() =>
      this.#db.prepare('INSERT INTO runs (at, kind) VALUES (?, ?)').run(ms(at), kind),
    );
    return Number(r.lastInsertRowid);
  }

  async recordDecision(runId: number, d: Decision): Promise<number> {
    return this.#write(() => this.#recordDecision(runId, d));
  }

  #recordDecision(runId: number, d: Decision): number {
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

  async finishRun(runId: number, result: unknown, endedAt: Date = new Date()): Promise<void> {
    this.#write(() => this.#finishRun(runId, result, endedAt));
  }

  #finishRun(runId: number, result: unknown, endedAt: Date): void {
    this.#db
      .prepare('UPDATE runs SET ended_at = ?, result = ? WHERE id = ?')
      .run(ms(endedAt), JSON.stringify(result ?? null), runId);
  }

  async getRun(runId: number): Promise<RunRecord | null> {
    const r = this.#db.prepare('SELECT * FROM runs WHERE id = ?').get(runId) as RunRow | undefined;
    if (!r) return null;
    return toRun(r);
  }

  async decisions(filter: DecisionFilter = {}): Promise<DecisionRecord[]> {
    const rows = this.#db
      .prepare(
        `SELECT d.*, r.at AS run_at, r.kind AS run_kind FROM decisions d JOIN runs r ON r.id = d.run_id
         WHERE (@policy IS NULL OR d.policy = @policy) AND (@runId IS NULL OR d.run_id = @runId)
         ORDER BY d.id DESC LIMIT @limit`,
      )
      .all({
        policy: filter.policy ?? null,
        runId: filter.runId ?? null,
        limit: limitOf(filter.limit, 100),
      }) as DecisionRow[];
    return rows.map(toDecision);
  }

  // ---------------------------------------------------------------- events

  async recordEvent(e: PawlEvent): Promise<number> {
    return this.#write(() => this.#recordEvent(e));
  }

  #recordEvent(e: PawlEvent): number {
    const r = this.#db
      .prepare('INSERT INTO events (at, kind, policy, repository, detail) VALUES (?, ?, ?, ?, ?)')
      .run(ms(e.at), e.kind, e.policy ?? null, e.repository ?? null, JSON.stringify(e.detail ?? {}));
    return Number(r.lastInsertRowid);
  }

  async events(filter: EventFilter = {}): Promise<EventRecord[]> {
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
        limit: limitOf(filter.limit, 100),
      }) as EventRow[];
    return rows.map(toEvent);
  }

  async latestEvents(kind: string, policies: readonly string[]): Promise<Map<string, EventRecord>> {
    const out = new Map<string, EventRecord>();
    for (const policy of policies) {
      const [newest] = await this.events({ kind, policy, limit: 1 });
      if (newest) out.set(policy, newest);
    }
    return out;
  }

  // ---------------------------------------------------------------- batches

  async write(batch: StoreWrite): Promise<void> {
    this.#write(() => {
      for (const d of batch.tagDigests ?? []) this.#setTagDigest(d.repository, d.tag, d.digest, d.at);
      for (const p of batch.policyStates ?? []) this.#setPolicyState(p.policy, p.state);
      for (const s of batch.selections ?? []) this.#recordSelection(s.policy, s.at, s.candidate, s.error);
      if (batch.decisions)
        for (const d of batch.decisions.decisions) this.#recordDecision(batch.decisions.runId, d);
      for (const e of batch.events ?? []) this.#recordEvent(e);
      const f = batch.finishRun;
      if (f) this.#finishRun(f.runId, f.result, f.endedAt);
    });
  }

  // ---------------------------------------------------------------- the daemon's work queue

  async putQueuedWork(items: readonly QueuedWork[]): Promise<void> {
    if (items.length === 0) return;
    this.#write(() => {
      const st = this.#db.prepare(
        `INSERT INTO serve_work (key, repositories, tags, events, first_at, version) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (key) DO UPDATE SET repositories = excluded.repositories, tags = excluded.tags,
           events = excluded.events, first_at = excluded.first_at, version = excluded.version`,
      );
      for (const i of items)
        st.run(i.key, JSON.stringify(i.repositories), JSON.stringify(i.tags), i.events, i.firstAt, i.version);
    });
    // Accepted work must survive a crash: committed now, not with the group.
    await this.flush();
  }

  async deleteQueuedWork(key: string): Promise<void> {
    this.#write(() => this.#db.prepare('DELETE FROM serve_work WHERE key = ?').run(key));
  }

  async queuedWork(): Promise<QueuedWork[]> {
    const rows = this.#db
      .prepare(
        'SELECT key, repositories, tags, events, first_at, version FROM serve_work ORDER BY first_at, key',
      )
      .all() as {
      key: string;
      repositories: string;
      tags: string;
      events: number;
      first_at: number;
      version: number;
    }[];
    return rows.map((r) => ({
      key: r.key,
      repositories: JSON.parse(r.repositories) as string[],
      tags: JSON.parse(r.tags) as string[],
      events: r.events,
      firstAt: r.first_at,
      version: r.version,
    }));
  }

  async interruptRunningScans(): Promise<number[]> {
    return this.#write(() => {
      const ids = this.#db
        .prepare("SELECT id FROM scans WHERE outcome = 'running' ORDER BY id")
        .pluck()
        .all() as number[];
      this.#db
        .prepare(
          `UPDATE scans SET outcome = 'failed', ended_at = started_at, error = ? WHERE outcome = 'running'`,
        )
        .run(INTERRUPTED);
      return ids;
    });
  }
}
