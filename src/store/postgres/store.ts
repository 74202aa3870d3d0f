/**
 * The PostgreSQL store (`--store postgres://…`): the same records as SQLite, in a schema of a
 * shared database, for several replicas. A small pool of connections (default 4), a statement
 * timeout on every connection, and every failure to reach the server as a StoreUnavailableError
 * (session.ts).
 */
import type * as records from '../../records/index.js';
import { CarriedReader, DecisionCarrier, type BaseSource, type CarriedRunRow } from '../carry.js';
import { CurrentTagsCache, type CurrentList } from '../current.js';
import {
  failedScanColumns,
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
import { PG_MIGRATIONS } from './migrations.js';
import { migratePostgres } from './migrate.js';
import { Session, type PostgresStoreOptions, type Q } from './session.js';
import { SQL } from './sql.js';
import { isEmpty, writeBatch } from './write.js';

export const PG_SCHEMA_VERSION = PG_MIGRATIONS.length;

/**
 * Opens a PostgreSQL store: connects (failing with StoreUnavailableError naming the host and
 * database when it cannot), migrates under an advisory lock, and keeps a small pool.
 */
export async function openPostgresStore(opts: PostgresStoreOptions): Promise<PostgresStore> {
  const store = new PostgresStore(opts);
  try {
    await store.migrate();
  } catch (err) {
    await store.close();
    throw err;
  }
  return store;
}

export class PostgresStore extends SingleReads implements store.Store {
  readonly kind = 'postgres' as const;
  readonly location: string;
  readonly schema: string;
  /** The pool, for components that live beside the store in the same database (replica coordination). */
  readonly pool: Session['pool'];
  readonly #s: Session;
  readonly #raw: { kept: number; bytes: number };
  readonly #current: CurrentTagsCache;
  readonly #carrier = new DecisionCarrier();
  readonly #carried: CarriedReader;
  readonly #bases: BaseSource = {
    recentBases: async () => (await this.#s.q<{ base: number }>(SQL.recentBases)).map((r) => r.base),
    automations: async (runId) =>
      (await this.#s.q<{ automation: string }>(SQL.automationsOfRun, [runId])).map((r) => r.automation),
    runRow: async (runId) => (await this.#s.q<stored.RunRow & CarriedRunRow>(SQL.run, [runId]))[0] ?? null,
  };

  /** Use openPostgresStore. */
  constructor(opts: PostgresStoreOptions) {
    super();
    this.#s = new Session(opts);
    this.location = this.#s.location;
    this.pool = this.#s.pool;
    this.schema = opts.schema ?? 'pawl';
    this.#raw = rawBounds(opts);
    this.#current = new CurrentTagsCache({
      lists: (repos) => this.#s.q<CurrentList>(SQL.currentLists, [repos]),
      tags: async (lists) => {
        const rows = await this.#s.q<{ repository: string; tag: string }>(SQL.tagsOfLists, [
          lists.map((l) => l.repository),
          lists.map((l) => l.image),
          lists.map((l) => l.list),
        ]);
        const out = new Map<string, string[]>(lists.map((l) => [l.repository, []]));
        for (const r of rows) out.get(r.repository)?.push(r.tag);
        return out;
      },
    });
    this.#carried = new CarriedReader({
      rows: (policy, runId, limit) => this.#s.q<stored.DecisionRow>(SQL.decisions, [policy, runId, limit]),
      run: async (runId) => (await this.#s.q<CarriedRunRow>(SQL.carriedRun, [runId]))[0] ?? null,
      carriedRuns: (below, limit, policy) =>
        this.#s.q<CarriedRunRow>(SQL.carriedRuns, [below, limit, policy]),
      rowsOfRuns: (runIds) => this.#s.q<stored.DecisionRow>(SQL.rowsOfRuns, [runIds]),
      result: async (runId) =>
        (await this.#s.q<{ result: string | null }>(SQL.runResult, [runId]))[0]?.result ?? null,
    });
  }

  /** Applies pending migrations (openPostgresStore does). */
  async migrate(): Promise<number> {
    const set = { schema: this.schema, table: 'store_migrations', steps: PG_MIGRATIONS };
    return this.#s.withClient((c) =>
      migratePostgres(c, { ...set, what: 'the state store', location: this.location }),
    );
  }

  /** Every write is its own transaction, committed before its promise resolves. */
  async flush(): Promise<void> {}

  async close(): Promise<void> {
    await this.#s.close();
  }

  async schemaVersion(): Promise<number> {
    return (await this.#s.q<{ v: number | null }>(SQL.schemaVersion))[0]?.v ?? 0;
  }

  // ---------------------------------------------------------------- scans

  async beginScan(repository: string, image: string, at: Date): Promise<number> {
    const params = [
      stored.INTERRUPTED,
      repository,
      image,
      stored.ms(at) - stored.STALE_RUNNING_SCAN_MS,
      stored.ms(at),
    ];
    return (await this.#s.q<{ id: number }>(SQL.beginScan, params))[0]!.id;
  }

  async finishScan(
    id: number,
    result: store.ScanResult,
    compare: records.CompareTags,
  ): Promise<records.ScanRecord> {
    return this.#s.tx(async (c) => {
      const one = async (sql: string, params: unknown[]) =>
        (await c.query<stored.ScanRow>(sql, params)).rows[0];
      await c.query(SQL.lockRepository, [id]);
      const row = runningScan(id, await one(SQL.scanForUpdate, [id]));
      const { repository, image } = row;
      const tags = goodTags(id, result);
      let finished: stored.ScanRow;
      if (tags === null) finished = (await one(SQL.failScan, [...failedScanColumns(result), id]))!;
      else {
        const checksum = tagListChecksum(tags);
        const { previous, superseded } = await previousGood(c, row, checksum);
        const good = goodScan(row, tags, checksum, previous, superseded, result, compare);
        finished = (await one(SQL.goodScan, [...good.columns, id]))!;
        if (good.previous !== null) {
          await c.query(SQL.moveTags, [good.at, id, repository, image, good.previous, good.removed]);
          if (good.removedSeen !== null)
            await c.query(SQL.seenRemoved, [
              good.removedSeen,
              repository,
              image,
              good.previous,
              good.removed,
            ]);
        }
        if (good.added.length > 0)
          await c.query(SQL.addTags, [repository, image, good.at, id, good.initial, good.added]);
      }
      const raw = rawToKeep(result, this.#raw);
      if (raw) {
        await c.query(SQL.putRaw, [id, repository, raw.body, raw.truncated]);
        await c.query(SQL.pruneRaw, [repository, this.#raw.kept]);
      }
      return stored.toScan(finished);
    });
  }

  async knownRepositories(): Promise<string[]> {
    const rows = await this.#s.q<{ repository: string }>(SQL.knownRepositories);
    return sortTags(rows.map((r) => r.repository));
  }

  async #oneScan(sql: string, repository: string): Promise<records.ScanRecord | null> {
    const r = await this.#s.q<stored.ScanRow>(sql, [repository]);
    return r[0] ? stored.toScan(r[0]) : null;
  }

  async lastScan(repository: string): Promise<records.ScanRecord | null> {
    return this.#oneScan(SQL.lastScan, repository);
  }

  async latestScans(repositories: readonly string[]): Promise<Map<string, store.LatestScans>> {
    const out = new Map<string, store.LatestScansDraft>(
      repositories.map((r) => [r, { finished: null, good: null }]),
    );
    if (repositories.length === 0) return out;
    const rows = await this.#s.q<stored.ScanRow & { which: 'finished' | 'good' }>(SQL.latestScans, [
      repositories,
    ]);
    for (const { which, ...row } of rows) {
      const entry = out.get(row.repository);
      if (entry) entry[which] = stored.toScan(row);
    }
    return out;
  }

  async scanHistory(repository: string, limit = 20): Promise<records.ScanRecord[]> {
    return (await this.#s.q<stored.ScanRow>(SQL.scanHistory, [repository, stored.limitOf(limit, 20)])).map(
      stored.toScan,
    );
  }

  async currentTagsOf(repositories: readonly string[]): Promise<Map<string, string[]>> {
    return this.#current.of(repositories);
  }

  async tagInfo(repository: string, tag: string): Promise<records.TagInfo | null> {
    const rows = await this.#s.q<stored.TagRow>(SQL.tagInfo, [repository, tag]);
    return rows[0] ? stored.toTagInfo(rows[0]) : null;
  }

  async currentTagInfos(repository: string): Promise<({ tag: string } & records.TagInfo)[]> {
    const byTag = new Map(
      (await this.#s.q<stored.TagRow>(SQL.tagInfos, [repository])).map((r) => [r.tag, r]),
    );
    return sortTags(byTag.keys()).map((tag) => ({ tag, ...stored.toTagInfo(byTag.get(tag)!) }));
  }

  async rawResponses(repository: string, scanId?: number): Promise<store.RawScanResponses[]> {
    const rows = await this.#s.q<stored.RawResponsesRow>(SQL.rawResponses, [repository, scanId ?? null]);
    return rows.map(stored.toRawResponses);
  }

  // ---------------------------------------------------------------- build times

  buildTimeCache(): store.BuildTimeCache {
    type Row = { created: number | null; source: string | null };
    return {
      get: async (digest: string): Promise<records.BuildTime | null | undefined> => {
        const r = (await this.#s.q<Row>(SQL.getBuildTime, [digest]))[0];
        if (!r) return undefined;
        if (r.created === null) return null;
        return { digest, created: stored.date(r.created), source: r.source ?? 'unknown' };
      },
      set: async (digest: string, value: records.BuildTime | null): Promise<void> => {
        await this.#s.q(SQL.setBuildTime, [
          digest,
          value ? stored.ms(value.created) : null,
          value ? value.source : null,
        ]);
      },
    };
  }

  verifiedCache(): store.VerifiedCache {
    return {
      get: async (key: string): Promise<string | undefined> =>
        (await this.#s.q<{ signer: string }>(SQL.getVerified, [key]))[0]?.signer,
      set: async (key: string, signer: string, at: Date): Promise<void> => {
        await this.#s.q(SQL.setVerified, [key, signer, stored.ms(at)]);
      },
    };
  }

  // ---------------------------------------------------------------- policies

  async policyStates(policies: readonly string[]): Promise<Map<string, store.PolicyState>> {
    return this.#byPolicy(policies, SQL.policyStates, [policies], stored.toPolicyState);
  }

  /** One row per policy (none for policies without one), by a query over all of them. */
  async #byPolicy<Row extends { policy: string | null }, T>(
    policies: readonly string[],
    sql: string,
    params: unknown[],
    convert: (r: Row) => T,
  ): Promise<Map<string, T>> {
    const out = new Map<string, T>();
    if (policies.length === 0) return out;
    for (const r of await this.#s.q<Row>(sql, params)) out.set(r.policy!, convert(r));
    return out;
  }

  async selectionHistory(policy: string, limit = 20): Promise<store.SelectionRecord[]> {
    return (
      await this.#s.q<stored.SelectionRow>(SQL.selectionHistory, [policy, stored.limitOf(limit, 20)])
    ).map(stored.toSelection);
  }

  async latestSelections(policies: readonly string[]): Promise<Map<string, store.SelectionRecord>> {
    return this.#byPolicy(policies, SQL.latestSelections, [policies], stored.toSelection);
  }

  // ---------------------------------------------------------------- commit batches

  async openBatches(automations: readonly string[]): Promise<Map<string, Date>> {
    if (automations.length === 0) return new Map();
    const rows = await this.#s.q<{ automation: string; opened_at: number }>(SQL.openBatches, [automations]);
    return new Map(rows.map((r) => [r.automation, stored.date(r.opened_at)]));
  }

  // ---------------------------------------------------------------- runs, decisions, events

  async beginRun(at: Date, kind: records.RunKind): Promise<number> {
    return (await this.#s.q<{ id: number }>(SQL.beginRun, [stored.ms(at), kind]))[0]!.id;
  }

  async getRun(runId: number): Promise<store.RunRecord | null> {
    const r = (await this.#s.q<stored.RunRow & CarriedRunRow>(SQL.run, [runId]))[0];
    return r ? this.#carried.run(r) : null;
  }

  async decisions(filter: store.DecisionFilter = {}): Promise<records.DecisionRecord[]> {
    return this.#carried.decisions(filter, stored.limitOf(filter.limit, 100));
  }

  async events(filter: store.EventFilter = {}): Promise<records.EventRecord[]> {
    const params = [
      filter.kind ?? null,
      filter.policy ?? null,
      filter.repository ?? null,
      filter.since ? stored.ms(filter.since) : null,
      stored.limitOf(filter.limit, 100),
    ];
    return (await this.#s.q<stored.EventRow>(SQL.events, params)).map(stored.toEvent);
  }

  async latestEvents(kind: string, policies: readonly string[]): Promise<Map<string, records.EventRecord>> {
    return this.#byPolicy(policies, SQL.latestEvents, [kind, policies], stored.toEvent);
  }

  // ---------------------------------------------------------------- batches

  async write(batch: store.StoreWrite): Promise<void> {
    if (isEmpty(batch)) return;
    await this.#carrier.lookUp(batch, this.#bases, this.#carried);
    const written = await this.#s.tx((c) => writeBatch(c, batch, this.#carrier));
    written();
  }
}

/**
 * The previous good scan of the image (null when there is none), with its list's tags unless
 * `checksum` is its list's, and whether a later good scan finished first: one round trip.
 */
async function previousGood(
  c: Q,
  row: stored.ScanRow,
  checksum: string,
): Promise<{ previous: PreviousScan | null; superseded: boolean }> {
  type Row = { superseded: boolean; id: number | null; started_at: number; checksum: string | null };
  const r = await c.query<Row & { list: number; tag: string | null }>(SQL.previousGood, [
    row.repository,
    row.image,
    row.id,
    checksum,
  ]);
  const first = r.rows[0]!;
  if (first.id === null) return { previous: null, superseded: first.superseded };
  const tags = sameList(first, checksum) ? null : r.rows.flatMap((x) => (x.tag === null ? [] : [x.tag]));
  return {
    previous: {
      id: first.id,
      startedAt: first.started_at,
      checksum: first.checksum,
      list: first.list,
      tags: tags && sortTags(tags),
    },
    superseded: first.superseded,
  };
}
