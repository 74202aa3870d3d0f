/** The SQLite store: one file in the state directory, for one host (better-sqlite3, synchronous underneath). */
import type Database from 'better-sqlite3';
import type {
  BuildTime,
  CompareTags,
  DecisionRecord,
  EventRecord,
  ScanRecord,
  TagInfo,
} from '../../records/index.js';
import {
  goodScan,
  goodTags,
  rawToKeep,
  runningScan,
  failedScanColumns,
  type PreviousScan,
} from '../finish.js';
import { rawBounds } from '../options.js';
import {
  INTERRUPTED,
  STALE_RUNNING_SCAN_MS,
  date,
  limitOf,
  ms,
  toDecision,
  toEvent,
  toPolicyState,
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
} from '../rows.js';
import { sortTags } from '../tags.js';
import type {
  BuildTimeCache,
  DecisionFilter,
  EventFilter,
  LatestScans,
  PolicyState,
  RawScanResponses,
  RunKind,
  RunRecord,
  ScanResult,
  SelectionRecord,
  Store,
  StoreOptions,
  StoreWrite,
} from '../types.js';
import type { WriteGroups } from './group.js';
import { SQL } from './sql.js';
import { writeBatch } from './write.js';

type Db = Database.Database;

/**
 * The SQLite store. Every method runs synchronously inside and resolves at once, so a method's
 * statements never interleave with another caller's. Writes are grouped (group.ts): each is a
 * savepoint in a transaction committed a few milliseconds later.
 */
export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  readonly #db: Db;
  readonly #groups: WriteGroups;
  readonly #raw: { kept: number; bytes: number };

  /** Use openSqliteStore. */
  constructor(
    db: Db,
    groups: WriteGroups,
    readonly location: string,
    options: StoreOptions = {},
  ) {
    this.#db = db;
    this.#groups = groups;
    this.#raw = rawBounds(options);
  }

  #get<R>(sql: string, ...params: unknown[]): R | undefined {
    return this.#db.prepare(sql).get(...params) as R | undefined;
  }

  #all<R>(sql: string, ...params: unknown[]): R[] {
    return this.#db.prepare(sql).all(...params) as R[];
  }

  #run(sql: string, ...params: unknown[]): number {
    return Number(this.#db.prepare(sql).run(...params).lastInsertRowid);
  }

  async flush(): Promise<void> {
    this.#groups.flush();
  }

  async close(): Promise<void> {
    this.#groups.close();
  }

  async schemaVersion(): Promise<number> {
    return this.#db.pragma('user_version', { simple: true }) as number;
  }

  // ---------------------------------------------------------------- scans

  async beginScan(repository: string, image: string, at: Date): Promise<number> {
    return this.#groups.write(() => {
      // A scan still "running" long after any timeout was cut off by a crash or a kill.
      this.#run(SQL.interruptScans, INTERRUPTED, repository, ms(at) - STALE_RUNNING_SCAN_MS);
      return this.#run(SQL.beginScan, repository, image, ms(at));
    });
  }

  async finishScan(id: number, result: ScanResult, compare: CompareTags): Promise<ScanRecord> {
    return this.#groups.write((): ScanRecord => {
      const row = runningScan(id, this.#get<ScanRow>(SQL.scan, id));
      const { repository, image } = row;
      const tags = goodTags(id, result);
      if (tags === null) this.#run(SQL.failScan, ...failedScanColumns(result), id);
      else {
        const good = goodScan(row, tags, this.#previousGood(row), result, compare);
        this.#run(SQL.goodScan, ...good.columns, id);
        if (good.previous !== null)
          this.#run(
            SQL.moveTags,
            good.at,
            id,
            repository,
            image,
            good.previous,
            JSON.stringify(good.removed),
          );
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
      }
      const raw = rawToKeep(result, this.#raw);
      if (raw) {
        this.#run(SQL.putRaw, id, repository, raw.body, raw.truncated);
        this.#run(SQL.pruneRaw, repository, repository, this.#raw.kept);
      }
      return toScan(this.#get<ScanRow>(SQL.scan, id)!);
    });
  }

  #previousGood(row: ScanRow): PreviousScan | null {
    const prev = this.#get<{ id: number }>(SQL.previousGood, row.repository, row.image, row.id);
    return prev ? { id: prev.id, tags: this.#tagsOfScan(row.repository, row.image, prev.id) } : null;
  }

  #tagsOfScan(repository: string, image: string, scanId: number): string[] {
    return sortTags(this.#db.prepare(SQL.tagsOfScan).pluck().all(repository, image, scanId) as string[]);
  }

  #scan(sql: string, repository: string): ScanRecord | null {
    const r = this.#get<ScanRow>(sql, repository);
    return r ? toScan(r) : null;
  }

  async knownRepositories(): Promise<string[]> {
    return this.#db.prepare(SQL.knownRepositories).pluck().all() as string[];
  }

  async lastScan(repository: string): Promise<ScanRecord | null> {
    return this.#scan(SQL.lastScan, repository);
  }

  async lastFinishedScan(repository: string): Promise<ScanRecord | null> {
    return this.#scan(SQL.lastFinished, repository);
  }

  async lastGoodScan(repository: string): Promise<ScanRecord | null> {
    return this.#scan(SQL.lastGood, repository);
  }

  async latestScans(repositories: readonly string[]): Promise<Map<string, LatestScans>> {
    type Row = ScanRow & { name: string; finished_id: number | null; good_id: number | null };
    const out = new Map<string, LatestScans>(repositories.map((r) => [r, { finished: null, good: null }]));
    for (const row of this.#all<Row>(SQL.latestScans, JSON.stringify(repositories))) {
      const latest = out.get(row.name)!;
      const scan = toScan(row);
      if (row.id === row.finished_id) latest.finished = scan;
      if (row.id === row.good_id) latest.good = scan;
    }
    return out;
  }

  async scanHistory(repository: string, limit = 20): Promise<ScanRecord[]> {
    return this.#all<ScanRow>(SQL.scanHistory, repository, limitOf(limit, 20)).map(toScan);
  }

  async currentTags(repository: string): Promise<string[]> {
    const last = this.#scan(SQL.lastGood, repository);
    return last ? this.#tagsOfScan(repository, last.image, last.id) : [];
  }

  async currentTagsOf(repositories: readonly string[]): Promise<Map<string, string[]>> {
    const rows = this.#all<{ name: string; tag: string }>(SQL.currentTagsOf, JSON.stringify(repositories));
    const byRepo = new Map<string, string[]>(repositories.map((r) => [r, []]));
    for (const r of rows) byRepo.get(r.name)!.push(r.tag);
    for (const [r, tags] of byRepo) byRepo.set(r, sortTags(tags));
    return byRepo;
  }

  async tagInfo(repository: string, tag: string): Promise<TagInfo | null> {
    const last = this.#scan(SQL.lastGood, repository);
    const r = last && this.#get<TagRow>(SQL.tagInfo, repository, last.image, tag);
    return r ? toTagInfo(r) : null;
  }

  async currentTagInfos(repository: string): Promise<({ tag: string } & TagInfo)[]> {
    const last = this.#scan(SQL.lastGood, repository);
    if (!last) return [];
    const byTag = new Map(
      this.#all<TagRow>(SQL.tagInfos, repository, last.image, last.id).map((r) => [r.tag, r]),
    );
    return sortTags(byTag.keys()).map((tag) => ({ tag, ...toTagInfo(byTag.get(tag)!) }));
  }

  async rawResponses(repository: string, scanId?: number): Promise<RawScanResponses[]> {
    const id = scanId ?? null;
    return this.#all<RawResponsesRow>(SQL.rawResponses, repository, id, id).map(toRawResponses);
  }

  // ---------------------------------------------------------------- build times

  buildTimeCache(): BuildTimeCache {
    const get = this.#db.prepare(SQL.getBuildTime);
    const set = this.#db.prepare(SQL.setBuildTime);
    const groups = this.#groups;
    return {
      async get(digest: string): Promise<BuildTime | null | undefined> {
        const r = get.get(digest) as { created: number | null; source: string | null } | undefined;
        if (!r) return undefined;
        if (r.created === null) return null;
        return { digest, created: date(r.created), source: r.source ?? 'unknown' };
      },
      async set(digest: string, value: BuildTime | null): Promise<void> {
        groups.write(() => set.run(digest, value ? ms(value.created) : null, value ? value.source : null));
      },
    };
  }

  // ---------------------------------------------------------------- policies

  async getPolicyState(policy: string): Promise<PolicyState | null> {
    const r = this.#get<PolicyStateRow>(SQL.policyState, policy);
    return r ? toPolicyState(r) : null;
  }

  async policyStates(policies: readonly string[]): Promise<Map<string, PolicyState>> {
    const rows = this.#all<PolicyStateRow>(SQL.policyStates, JSON.stringify(policies));
    return new Map(rows.map((r) => [r.policy, toPolicyState(r)]));
  }

  async selectionHistory(policy: string, limit = 20): Promise<SelectionRecord[]> {
    return this.#all<SelectionRow>(SQL.selectionHistory, policy, limitOf(limit, 20)).map(toSelection);
  }

  async latestSelections(policies: readonly string[]): Promise<Map<string, SelectionRecord>> {
    const out = new Map<string, SelectionRecord>();
    for (const p of policies) {
      const [newest] = await this.selectionHistory(p, 1);
      if (newest) out.set(p, newest);
    }
    return out;
  }

  // ---------------------------------------------------------------- runs, decisions, events

  async beginRun(at: Date, kind: RunKind): Promise<number> {
    return this.#groups.write(() => this.#run(SQL.beginRun, ms(at), kind));
  }

  async getRun(runId: number): Promise<RunRecord | null> {
    const r = this.#get<RunRow>(SQL.run, runId);
    return r ? toRun(r) : null;
  }

  async decisions(filter: DecisionFilter = {}): Promise<DecisionRecord[]> {
    const params = {
      policy: filter.policy ?? null,
      runId: filter.runId ?? null,
      limit: limitOf(filter.limit, 100),
    };
    return this.#all<DecisionRow>(SQL.decisions, params).map(toDecision);
  }

  async events(filter: EventFilter = {}): Promise<EventRecord[]> {
    const params = {
      kind: filter.kind ?? null,
      policy: filter.policy ?? null,
      repository: filter.repository ?? null,
      since: filter.since ? ms(filter.since) : null,
      limit: limitOf(filter.limit, 100),
    };
    return this.#all<EventRow>(SQL.events, params).map(toEvent);
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
    this.#groups.write(() => writeBatch(this.#db, batch));
  }
}
