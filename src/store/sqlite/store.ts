/** The SQLite store: one file in the state directory, for one host (better-sqlite3, synchronous underneath). */
import type Database from 'better-sqlite3';
import type * as records from '../../records/index.js';
import { CarriedReader, DecisionCarrier, type BaseSource, type CarriedRunRow } from '../carry.js';
import { CurrentTagsCache, type CurrentList } from '../current.js';
import { LatestScansCache } from '../latest.js';
import {
  failedRow,
  failedScanColumns,
  finishedRow,
  goodScan,
  goodTags,
  rawToKeep,
  runningScan,
  sameList,
  type PreviousScan,
} from '../finish.js';
import { SingleReads } from '../base.js';
import { rawBounds } from '../options.js';
import * as stored from '../rows.js';
import { sortTags, tagListChecksum } from '../tags.js';
import type * as store from '../types.js';
import type { WriteGroups } from './group.js';
import { SqliteWorkQueue } from './queue.js';
import { SQL } from './sql.js';
import { writeBatch } from './write.js';

type Db = Database.Database;

/** How often, at most, beginScan marks stale running scans interrupted (#interruptStale). */
const STALE_SWEEP_MS = 60_000;

/** The columns of a good scan that the next scan of its image compares with. */
type GoodScanRow = Pick<stored.ScanRow, 'id' | 'started_at' | 'checksum' | 'list_scan_id'>;

/** SQL.finishing: the scan, and the image's newest good scan (head_id: when it began before). */
type FinishingRow = stored.ScanRow & {
  head_good_id: number | null;
  head_id: number | null;
  head_started_at: number | null;
  head_checksum: string | null;
  head_list_scan_id: number | null;
};

/**
 * The SQLite store. Every method runs synchronously inside and resolves at once, so a method's
 * statements never interleave with another caller's. Writes are grouped (group.ts): each is a
 * savepoint in a transaction committed a few milliseconds later.
 */
export class SqliteStore extends SingleReads implements store.Store, store.WorkQueueStore {
  readonly kind = 'sqlite' as const;
  readonly #db: Db;
  readonly #groups: WriteGroups;
  readonly #raw: { kept: number; bytes: number };
  readonly #queue: SqliteWorkQueue;
  readonly #current: CurrentTagsCache;
  readonly #latest = new LatestScansCache((repositories) => this.#readLatestScans(repositories));
  readonly #carrier = new DecisionCarrier();
  /** The commits that had failed when the carrier last learnt a base. */
  #failures = 0;
  /** When beginScan last marked stale scans interrupted (the scans' clock, ms; #interruptStale). */
  #swept: number | null = null;
  /** Repositories whose raw responses grew in the open group: pruned once, before it commits. */
  readonly #rawWritten = new Set<string>();
  /**
   * Each repository's raw responses beyond the newest `kept`, deleted for every repository the
   * group wrote to in one statement where each scan's end made one (issue 27). Run before the
   * group commits, and before raw responses are read.
   */
  readonly #pruneRaw = (): void => {
    if (this.#rawWritten.size === 0) return;
    const repositories = JSON.stringify([...this.#rawWritten]);
    this.#rawWritten.clear();
    this.#run(SQL.pruneRaw, repositories, this.#raw.kept);
  };
  readonly #carried: CarriedReader;
  readonly #bases: BaseSource = {
    recentBases: async () => this.#all<{ base: number }>(SQL.recentBases).map((r) => r.base),
    automations: async (runId) => this.#db.prepare(SQL.automationsOfRun).pluck().all(runId) as string[],
    runRow: async (runId) => this.#get<stored.RunRow & CarriedRunRow>(SQL.run, runId) ?? null,
  };

  /** Use openSqliteStore. */
  constructor(
    db: Db,
    groups: WriteGroups,
    readonly location: string,
    options: store.StoreOptions = {},
  ) {
    super();
    this.#db = db;
    this.#groups = groups;
    this.#raw = rawBounds(options);
    this.#queue = new SqliteWorkQueue(db, groups);
    this.#current = new CurrentTagsCache({
      lists: async (repos) => this.#all<CurrentList>(SQL.currentLists, JSON.stringify(repos)),
      tags: async (lists) =>
        new Map(lists.map((l) => [l.repository, this.#tagsOfScan(l.repository, l.image, l.list)])),
    });
    this.#carried = new CarriedReader({
      rows: async (policy, runId, limit) =>
        this.#all<stored.DecisionRow>(SQL.decisions, { policy, runId, limit }),
      run: async (runId) => this.#get<CarriedRunRow>(SQL.carriedRun, runId) ?? null,
      carriedRuns: async (below, limit, policy) =>
        this.#all<CarriedRunRow>(SQL.carriedRuns, { below, limit, policy }),
      rowsOfRuns: async (runIds) => this.#all<stored.DecisionRow>(SQL.rowsOfRuns, JSON.stringify(runIds)),
      result: async (runId) => this.#get<{ result: string | null }>(SQL.runResult, runId)?.result ?? null,
    });
  }

  /**
   * Each query's statement, prepared once: better-sqlite3 keeps none, and a pass asks the same
   * few dozen queries each time. Plain statements only (never plucked or made raw here).
   */
  readonly #statements = new Map<string, Database.Statement>();

  #prepared(sql: string): Database.Statement {
    let st = this.#statements.get(sql);
    if (!st) this.#statements.set(sql, (st = this.#db.prepare(sql)));
    return st;
  }

  #get<R>(sql: string, ...params: unknown[]): R | undefined {
    return this.#prepared(sql).get(...params) as R | undefined;
  }

  #all<R>(sql: string, ...params: unknown[]): R[] {
    return this.#prepared(sql).all(...params) as R[];
  }

  #run(sql: string, ...params: unknown[]): number {
    return Number(this.#prepared(sql).run(...params).lastInsertRowid);
  }

  async flush(): Promise<void> {
    this.#groups.flush();
  }

  async close(): Promise<void> {
    this.#groups.close();
  }

  unwritable(): string | null {
    return this.#groups.failing();
  }

  async schemaVersion(): Promise<number> {
    return this.#db.pragma('user_version', { simple: true }) as number;
  }

  // ---------------------------------------------------------------- scans

  async beginScan(repository: string, image: string, at: Date): Promise<number> {
    return this.#groups.write(() => {
      this.#interruptStale(stored.ms(at));
      // A running scan is neither the latest finished nor the latest good one: what is kept
      // stays true (the dead scans the sweep marks interrupted are forgotten by it).
      return this.#run(SQL.beginScan, repository, image, stored.ms(at), repository);
    });
  }

  /**
   * A scan still "running" long after any timeout was cut off by a crash or a kill (of any
   * process on this file): marked interrupted before a scan begins. Every repository's in one
   * statement, at most once a minute of the scans' clock: a statement for each scan begun was
   * 500 a pass of 500 repositories (issue 27), and a scan stale for six hours is as well marked
   * a minute later. A clock set back sweeps again.
   */
  #interruptStale(now: number): void {
    const last = this.#swept;
    if (last !== null && now >= last && now - last < STALE_SWEEP_MS) return;
    const swept = this.#db
      .prepare(SQL.interruptScans)
      .pluck()
      .all(stored.INTERRUPTED, now - stored.STALE_RUNNING_SCAN_MS) as string[];
    for (const repository of swept) this.#latest.forget(repository);
    this.#swept = now;
  }

  async finishScan(
    id: number,
    result: store.ScanResult,
    compare: records.CompareTags,
  ): Promise<records.ScanRecord> {
    return this.#groups.write((): records.ScanRecord => {
      // The head's columns ride along on the row (no copy without them: an object rest costs
      // more than the statement it saved, in a one-shot command's interpreter).
      const row: FinishingRow = runningScan(
        id,
        this.#get<FinishingRow>(SQL.finishing, id),
        this.#groups.failing(),
      );
      const head = row.head_good_id;
      const { repository, image } = row;
      this.#latest.forget(repository);
      const tags = goodTags(id, result);
      let finished: stored.ScanRow;
      if (tags === null) {
        const columns = failedScanColumns(result);
        this.#run(SQL.failScan, ...columns, id);
        finished = failedRow(row, columns);
      } else {
        const checksum = tagListChecksum(tags);
        const superseded = head !== null && head > id;
        const before =
          row.head_id === null
            ? null
            : {
                id: row.head_id,
                started_at: row.head_started_at!,
                checksum: row.head_checksum,
                list_scan_id: row.head_list_scan_id,
              };
        const previous = this.#previousGood(row, checksum, head, before);
        const good = goodScan(row, tags, checksum, previous, superseded, result, compare);
        this.#run(SQL.goodScan, ...good.columns, id);
        if (good.previous !== null) {
          const removed = JSON.stringify(good.removed);
          this.#run(SQL.moveTags, good.at, id, repository, image, good.previous, removed);
          if (good.removedSeen !== null)
            this.#run(SQL.seenRemoved, good.removedSeen, repository, image, good.previous, removed);
        }
        if (good.added.length > 0)
          this.#run(
            SQL.addTags,
            repository,
            image,
            good.at,
            good.at,
            id,
            id,
            good.initial,
            JSON.stringify(good.added),
          );
        finished = finishedRow(row, good);
      }
      const raw = rawToKeep(result, this.#raw);
      if (raw) {
        this.#run(SQL.putRaw, id, repository, raw.body, raw.truncated);
        if (this.#rawWritten.size === 0) this.#groups.beforeCommit(this.#pruneRaw);
        this.#rawWritten.add(repository);
      }
      return stored.toScan(finished);
    });
  }

  /**
   * The previous good scan of the image; its tags only when `checksum` is not its list's. `head`:
   * the image's newest good scan, the previous one unless a later scan finished first; `before`,
   * its row when it began before this scan (read with it, SQL.finishing).
   */
  #previousGood(
    row: stored.ScanRow,
    checksum: string,
    head: number | null,
    before: GoodScanRow | null,
  ): PreviousScan | null {
    if (head === null) return null;
    const prev =
      head < row.id ? before : this.#get<GoodScanRow>(SQL.previousGoodBack, { id: row.id, image: row.image });
    if (!prev) return null;
    const list = stored.listOf(prev);
    return {
      id: prev.id,
      startedAt: prev.started_at,
      checksum: prev.checksum,
      list,
      tags: sameList(prev, checksum) ? null : this.#tagsOfScan(row.repository, row.image, list),
    };
  }

  #tagsOfScan(repository: string, image: string, scanId: number): string[] {
    return sortTags(this.#db.prepare(SQL.tagsOfScan).pluck().all(repository, image, scanId) as string[]);
  }

  #scan(sql: string, repository: string): records.ScanRecord | null {
    const r = this.#get<stored.ScanRow>(sql, repository);
    return r ? stored.toScan(r) : null;
  }

  async knownRepositories(): Promise<string[]> {
    return this.#db.prepare(SQL.knownRepositories).pluck().all() as string[];
  }

  async lastScan(repository: string): Promise<records.ScanRecord | null> {
    return this.#scan(SQL.lastScan, repository);
  }

  async latestScans(repositories: readonly string[]): Promise<store.LatestScansOf> {
    // Another connection's commit (a `pawl scan` beside the daemon), or a failed commit of this
    // one (its rollback took scans read before it), and what was kept is no longer so.
    const version = this.#get<{ data_version: number }>(SQL.dataVersion)!.data_version;
    return this.#latest.of(repositories, `${version} ${this.#groups.failures()}`);
  }

  #readLatestScans(repositories: readonly string[]): Map<string, store.LatestScans> {
    type Row = stored.ScanRow & { name: string; finished_id: number | null; good_id: number | null };
    const out = new Map<string, store.LatestScansDraft>(
      repositories.map((r) => [r, { finished: null, good: null }]),
    );
    for (const row of this.#all<Row>(SQL.latestScans, JSON.stringify(repositories))) {
      const latest = out.get(row.name)!;
      const scan = stored.toScan(row);
      if (row.id === row.finished_id) latest.finished = scan;
      if (row.id === row.good_id) latest.good = scan;
    }
    return out;
  }

  async scanHistory(repository: string, limit = 20): Promise<records.ScanRecord[]> {
    const params = { repository, limit: stored.limitOf(limit, 20) };
    return this.#all<stored.ScanRow>(SQL.scanHistory, params).map(stored.toScan);
  }

  async currentTagsOf(repositories: readonly string[]): Promise<Map<string, string[]>> {
    return this.#current.of(repositories);
  }

  async tagInfo(repository: string, tag: string): Promise<records.TagInfo | null> {
    const last = this.#get<stored.ScanRow>(SQL.lastGood, repository);
    const r =
      last &&
      this.#get<stored.TagRow>(
        SQL.tagInfo,
        stored.listOf(last),
        last.started_at,
        repository,
        last.image,
        tag,
      );
    return r ? stored.toTagInfo(r) : null;
  }

  async currentTagInfos(repository: string): Promise<({ tag: string } & records.TagInfo)[]> {
    const last = this.#get<stored.ScanRow>(SQL.lastGood, repository);
    if (!last) return [];
    const rows = this.#all<stored.TagRow>(
      SQL.tagInfos,
      last.started_at,
      repository,
      last.image,
      stored.listOf(last),
    );
    const byTag = new Map(rows.map((r) => [r.tag, r]));
    return sortTags(byTag.keys()).map((tag) => ({ tag, ...stored.toTagInfo(byTag.get(tag)!) }));
  }

  async rawResponses(repository: string, scanId?: number): Promise<store.RawScanResponses[]> {
    // What the open group wrote is read as it will be committed: pruned.
    if (this.#rawWritten.size > 0) this.#groups.write(this.#pruneRaw);
    const id = scanId ?? null;
    return this.#all<stored.RawResponsesRow>(SQL.rawResponses, repository, id, id).map(stored.toRawResponses);
  }

  // ---------------------------------------------------------------- build times

  buildTimeCache(): store.BuildTimeCache {
    const get = this.#db.prepare(SQL.getBuildTime);
    const set = this.#db.prepare(SQL.setBuildTime);
    const groups = this.#groups;
    return {
      async get(digest: string): Promise<records.BuildTime | null | undefined> {
        const r = get.get(digest) as { created: number | null; source: string | null } | undefined;
        if (!r) return undefined;
        if (r.created === null) return null;
        return { digest, created: stored.date(r.created), source: r.source ?? 'unknown' };
      },
      async set(digest: string, value: records.BuildTime | null): Promise<void> {
        groups.write(() =>
          set.run(digest, value ? stored.ms(value.created) : null, value ? value.source : null),
        );
      },
    };
  }

  verifiedCache(): store.VerifiedCache {
    const get = this.#db.prepare(SQL.getVerified);
    const set = this.#db.prepare(SQL.setVerified);
    const groups = this.#groups;
    return {
      async get(key: string): Promise<string | undefined> {
        return (get.get(key) as { signer: string } | undefined)?.signer;
      },
      async set(key: string, signer: string, at: Date): Promise<void> {
        groups.write(() => set.run(key, signer, stored.ms(at)));
      },
    };
  }

  // ---------------------------------------------------------------- policies

  async policyStates(policies: readonly string[]): Promise<Map<string, store.PolicyState>> {
    const rows = this.#all<stored.PolicyStateRow>(SQL.policyStates, JSON.stringify(policies));
    return new Map(rows.map((r) => [r.policy, stored.toPolicyState(r)]));
  }

  async selectionHistory(policy: string, limit = 20): Promise<store.SelectionRecord[]> {
    const params = { policy, limit: stored.limitOf(limit, 20) };
    return this.#all<stored.SelectionRow>(SQL.selectionHistory, params).map(stored.toSelection);
  }

  async latestSelections(policies: readonly string[]): Promise<Map<string, store.SelectionRecord>> {
    const rows = this.#all<stored.SelectionRow>(SQL.latestSelections, JSON.stringify(policies));
    return new Map(rows.map((r) => [r.policy, stored.toSelection(r)]));
  }

  // ---------------------------------------------------------------- commit batches

  async openBatches(automations: readonly string[]): Promise<Map<string, Date>> {
    const rows = this.#all<{ automation: string; opened_at: number }>(
      SQL.openBatches,
      JSON.stringify(automations),
    );
    return new Map(rows.map((r) => [r.automation, stored.date(r.opened_at)]));
  }

  // ---------------------------------------------------------------- runs, decisions, events

  async beginRun(at: Date, kind: records.RunKind): Promise<number> {
    return this.#groups.write(() => this.#run(SQL.beginRun, stored.ms(at), kind));
  }

  async getRun(runId: number): Promise<store.RunRecord | null> {
    const r = this.#get<stored.RunRow & CarriedRunRow>(SQL.run, runId);
    return r ? this.#carried.run(r) : null;
  }

  async decisions(filter: store.DecisionFilter = {}): Promise<records.DecisionRecord[]> {
    return this.#carried.decisions(filter, stored.limitOf(filter.limit, 100));
  }

  async events(filter: store.EventFilter = {}): Promise<records.EventRecord[]> {
    const params = {
      kind: filter.kind ?? null,
      policy: filter.policy ?? null,
      repository: filter.repository ?? null,
      since: filter.since ? stored.ms(filter.since) : null,
      limit: stored.limitOf(filter.limit, 100),
    };
    return this.#all<stored.EventRow>(SQL.events, params).map(stored.toEvent);
  }

  async latestEvents(kind: string, policies: readonly string[]): Promise<Map<string, records.EventRecord>> {
    const out = new Map<string, records.EventRecord>();
    for (const policy of policies) {
      const [newest] = await this.events({ kind, policy, limit: 1 });
      if (newest) out.set(policy, newest);
    }
    return out;
  }

  // ---------------------------------------------------------------- batches

  async write(batch: store.StoreWrite): Promise<void> {
    // A failed commit lost the writes of its group: a base among them is not stored.
    if (this.#groups.failures() !== this.#failures) {
      this.#carrier.clear();
      this.#failures = this.#groups.failures();
    }
    await this.#carrier.lookUp(batch, this.#bases, this.#carried);
    this.#groups.write(() => writeBatch(this.#db, batch, this.#carrier))();
  }

  // ---------------------------------------------------------------- the daemon's work queue

  putQueuedWork(items: readonly store.QueuedWork[]): Promise<void> {
    return this.#queue.put(items);
  }
  deleteQueuedWork(key: string): Promise<void> {
    return this.#queue.delete(key);
  }
  queuedWork(): Promise<store.QueuedWork[]> {
    return this.#queue.all();
  }
  interruptRunningScans(): Promise<number[]> {
    const interrupted = this.#queue.interruptRunningScans();
    this.#latest.clear();
    return interrupted;
  }
}
