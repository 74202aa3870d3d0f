/**
 * The PostgreSQL store (`--store postgres://…`): the same records as SQLite, in a schema of a
 * shared database, for several replicas. A small pool of connections (default 4), a statement
 * timeout on every connection, and every failure to reach the server as a StoreUnavailableError.
 */
import pg from 'pg';
import type { PoolClient, QueryResultRow } from 'pg';
import { PawlError, Redactor, RuntimeError, errorMessage } from '../../util/index.js';
import { StoreUnavailableError } from '../errors.js';
import { rawBounds } from '../options.js';
import { sanitizeResponses } from '../redact.js';
import { sortTags } from '../tags.js';
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
} from '../rows.js';
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
} from '../types.js';
import { PG_MIGRATIONS } from './migrations.js';
import { migratePostgres, quoteIdent } from './migrate.js';
import { displayUrl } from './url.js';

export const PG_SCHEMA_VERSION = PG_MIGRATIONS.length;

export interface PostgresStoreOptions extends StoreOptions {
  /** `postgres://user@host:port/db`; a password in it is used unless `password` is given. */
  url: string;
  password?: string;
  /** The schema of the store's tables (default `pawl`); other components may live beside it. */
  schema?: string;
  /** Connections in the pool (default 4; env PAWL_STORE_POOL_SIZE). */
  poolSize?: number;
  /** Longest a statement may run, ms (default 30 s). */
  statementTimeoutMs?: number;
  /** Longest to wait for a connection, ms (default 10 s). */
  connectTimeoutMs?: number;
  /** Told about connections that fail while idle (the pool replaces them). */
  onIdleError?: (err: Error) => void;
}

/** pg's connection settings for a store URL: what replicas need to open their own connections (LISTEN). */
export function postgresClientConfig(opts: PostgresStoreOptions): pg.ClientConfig {
  const schema = opts.schema ?? 'pawl';
  return {
    connectionString: withPassword(opts.url, opts.password),
    application_name: 'pawl',
    statement_timeout: opts.statementTimeoutMs ?? 30_000,
    // A transaction left open by a stuck process must not hold locks for long.
    idle_in_transaction_session_timeout: 60_000,
    connectionTimeoutMillis: opts.connectTimeoutMs ?? 10_000,
    options: `-c search_path=${quoteIdent(schema)}`,
    // BIGINT (times in ms, ids) as numbers: both fit in 2^53.
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === pg.types.builtins.INT8
          ? (v: string) => Number(v)
          : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
    },
  };
}

/** pg lets the connection string override a separate `password`: the password goes into the URL. */
function withPassword(url: string, password: string | undefined): string {
  if (password === undefined) return url;
  try {
    const u = new URL(url);
    u.password = encodeURIComponent(password);
    return u.toString();
  } catch {
    return url;
  }
}

const SERVER_GONE = new Set(['57P01', '57P02', '57P03', '53300']);
const REFUSED = new Set(['28P01', '28000', '3D000', '3F000', '42501']);

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

type Q = Pick<PoolClient, 'query'>;

export class PostgresStore implements Store {
  readonly kind = 'postgres' as const;
  readonly location: string;
  readonly schema: string;
  /** The pool, for components that live beside the store in the same database (replica coordination). */
  readonly pool: pg.Pool;
  readonly #redactor = new Redactor();
  readonly #raw: { kept: number; bytes: number };
  readonly #where: string;
  #closed = false;

  /** Use openPostgresStore. */
  constructor(opts: PostgresStoreOptions) {
    this.location = displayUrl(opts.url);
    this.schema = opts.schema ?? 'pawl';
    let host = '?';
    let database = '?';
    try {
      const u = new URL(opts.url);
      host = u.host || 'localhost';
      database = decodeURIComponent(u.pathname.replace(/^\//, '')) || u.username || '(default)';
      if (u.password) this.#secret(decodeURIComponent(u.password));
    } catch {
      // parseStoreSpec checked it; a URL that does not parse fails at connect with its own words.
    }
    this.#where = `PostgreSQL at ${host}, database ${database}`;
    if (opts.password) this.#secret(opts.password);
    this.#raw = rawBounds(opts);
    this.pool = new pg.Pool({
      ...postgresClientConfig(opts),
      max: Math.max(1, Math.floor(opts.poolSize ?? 4)),
      idleTimeoutMillis: 30_000,
    });
    // An idle connection the server closed must not crash the process: the pool drops it.
    this.pool.on('error', (err) => opts.onIdleError?.(err));
    // Nor a checked-out one between two statements (the server stopping, say): pg emits 'error'
    // on a client with no query running, and the pool listens only while it is idle. The next
    // query on it fails, and the connection is dropped when it is released.
    this.pool.on('connect', (client) => client.on('error', (err) => opts.onIdleError?.(err)));
  }

  #secret(value: string): void {
    this.#redactor.add(value);
    this.#redactor.add(encodeURIComponent(value));
    this.#redactor.add(JSON.stringify(value).slice(1, -1));
  }

  /** A failure as the store's error: the class says what happened, the words say where. */
  #error(err: unknown, phase: 'connect' | 'query'): Error {
    if (err instanceof PawlError) return err;
    const said = this.#redactor.text(errorMessage(err));
    const code = err instanceof pg.DatabaseError ? (err.code ?? '') : '';
    if (phase === 'connect') {
      if (REFUSED.has(code))
        return new StoreUnavailableError(`${this.#where} refused pawl: ${said}`, 'refused', this.location);
      return new StoreUnavailableError(
        `cannot connect to ${this.#where}: ${said}`,
        'unreachable',
        this.location,
      );
    }
    if (!(err instanceof pg.DatabaseError))
      return new StoreUnavailableError(
        `lost the connection to ${this.#where}: ${said}`,
        'lost',
        this.location,
      );
    if (code.startsWith('08') || SERVER_GONE.has(code))
      return new StoreUnavailableError(`${this.#where} is unavailable: ${said}`, 'lost', this.location);
    if (code === '57014')
      return new StoreUnavailableError(
        `${this.#where} did not answer in time: ${said}`,
        'timeout',
        this.location,
      );
    return new RuntimeError(`the state store (${this.#where}): ${said}`);
  }

  async #connect(): Promise<PoolClient> {
    if (this.#closed) throw new RuntimeError(`the state store (${this.#where}) is closed`);
    try {
      return await this.pool.connect();
    } catch (err) {
      throw this.#error(err, 'connect');
    }
  }

  /** One statement on a pooled connection. */
  async #q<R extends QueryResultRow>(sql: string, params: unknown[] = []): Promise<R[]> {
    const c = await this.#connect();
    let broken: Error | undefined;
    try {
      return (await c.query<R>(sql, params)).rows;
    } catch (err) {
      if (!(err instanceof pg.DatabaseError) && err instanceof Error) broken = err;
      throw this.#error(err, 'query');
    } finally {
      c.release(broken);
    }
  }

  /** A transaction on one connection: committed when `fn` resolves, rolled back when it throws. */
  async #tx<T>(fn: (c: Q) => Promise<T>): Promise<T> {
    const c = await this.#connect();
    let broken: Error | undefined;
    try {
      await c.query('BEGIN');
      const out = await fn(c);
      await c.query('COMMIT');
      return out;
    } catch (err) {
      if (!(err instanceof pg.DatabaseError) && !(err instanceof PawlError) && err instanceof Error)
        broken = err;
      else await c.query('ROLLBACK').catch(() => undefined);
      throw this.#error(err, 'query');
    } finally {
      c.release(broken);
    }
  }

  /** Applies pending migrations (openPostgresStore does). */
  async migrate(): Promise<number> {
    const c = await this.#connect();
    let broken: Error | undefined;
    try {
      return await migratePostgres(c, {
        schema: this.schema,
        table: 'store_migrations',
        steps: PG_MIGRATIONS,
        what: 'the state store',
        location: this.location,
      });
    } catch (err) {
      if (!(err instanceof pg.DatabaseError) && !(err instanceof PawlError) && err instanceof Error)
        broken = err;
      throw this.#error(err, 'query');
    } finally {
      c.release(broken);
    }
  }

  /** Every write is its own transaction, committed before its promise resolves. */
  async flush(): Promise<void> {}

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.pool.end();
  }

  async schemaVersion(): Promise<number> {
    const r = await this.#q<{ v: number | null }>('SELECT max(version) AS v FROM store_migrations');
    return r[0]?.v ?? 0;
  }

  // ---------------------------------------------------------------- scans

  async beginScan(repository: string, image: string, at: Date): Promise<number> {
    // One statement, so one round trip: a scan still "running" long after any timeout was cut
    // off by a crash or a kill, and is marked so as the new one starts.
    const r = await this.#q<{ id: number }>(
      `WITH interrupted AS (
         UPDATE scans SET outcome = 'failed', ended_at = started_at, error = $1
         WHERE repository = $2 AND outcome = 'running' AND started_at < $4)
       INSERT INTO scans (repository, image, started_at) VALUES ($2, $3, $5) RETURNING id`,
      [INTERRUPTED, repository, image, ms(at) - STALE_RUNNING_SCAN_MS, ms(at)],
    );
    return r[0]!.id;
  }

  async finishScan(id: number, result: ScanResult, compare: CompareTags): Promise<ScanRecord> {
    return this.#tx(async (c) => {
      // One finisher per repository at a time: the comparison with the previous good scan must
      // see a settled list, as SQLite's single writer guarantees.
      const locked = await c.query(
        "SELECT pg_advisory_xact_lock(hashtextextended('pawl:scan:' || repository, 0)) FROM scans WHERE id = $1",
        [id],
      );
      if (locked.rowCount === 0) throw new RuntimeError(`no scan with id ${id}`);
      const row = (await c.query<ScanRow>('SELECT * FROM scans WHERE id = $1 FOR UPDATE', [id])).rows[0]!;
      if (row.outcome !== 'running')
        throw new RuntimeError(`scan ${id} has already finished (${row.outcome})`);
      const endedAt = ms(result.endedAt);
      let finished: ScanRow;
      if (result.outcome === 'failed') {
        finished = (
          await c.query<ScanRow>(
            "UPDATE scans SET outcome = 'failed', ended_at = $1, error = $2, requests = $3 WHERE id = $4 RETURNING *",
            [endedAt, result.error ?? 'scan failed', result.requests, id],
          )
        ).rows[0]!;
      } else {
        if (!result.tags) throw new RuntimeError(`finishScan(${id}): a good scan needs its tags`);
        const tags = sortTags(result.tags);
        const previous = await previousGood(c, row.repository, row.image, id);
        const prev = previous?.id ?? null;
        const diff = compare(previous?.tags ?? null, tags);
        finished = (
          await c.query<ScanRow>(
            `UPDATE scans SET outcome = 'ok', ended_at = $1, error = NULL, tag_count = $2, checksum = $3,
             added = $4, removed = $5, anomalies = $6, requests = $7 WHERE id = $8 RETURNING *`,
            [endedAt, ...goodScanColumns(tags, diff, result), id],
          )
        ).rows[0]!;
        // The scan's start is when the tag was observed; the list may take minutes to page through.
        const at = row.started_at;
        // Steady state: one statement moves every tag still listed, then only new tags are written.
        if (prev !== null) {
          await c.query(
            `UPDATE tags SET last_seen = $1, last_scan_id = $2
             WHERE repository = $3 AND image = $4 AND last_scan_id = $5 AND NOT (tag = ANY($6::text[]))`,
            [at, id, row.repository, row.image, prev, diff.removed],
          );
        }
        const fresh = prev === null ? tags : diff.added;
        if (fresh.length > 0) {
          await c.query(
            `INSERT INTO tags (repository, image, tag, first_seen, last_seen, first_scan_id, last_scan_id, initial)
             SELECT $1, $2, t, $3, $3, $4, $4, $5 FROM unnest($6::text[]) AS t
             ON CONFLICT (repository, image, tag) DO UPDATE SET last_seen = excluded.last_seen, last_scan_id = excluded.last_scan_id`,
            [row.repository, row.image, at, id, prev === null ? 1 : 0, fresh],
          );
        }
      }
      if (result.responses && result.responses.length > 0 && this.#raw.kept > 0) {
        const { body, truncated } = sanitizeResponses(result.responses, this.#raw.bytes);
        await c.query(
          `INSERT INTO raw_responses (scan_id, repository, body, truncated) VALUES ($1, $2, $3, $4)
           ON CONFLICT (scan_id) DO UPDATE SET body = excluded.body, truncated = excluded.truncated`,
          [id, row.repository, body, truncated ? 1 : 0],
        );
        await c.query(
          `DELETE FROM raw_responses WHERE repository = $1 AND scan_id NOT IN
           (SELECT scan_id FROM raw_responses WHERE repository = $1 ORDER BY scan_id DESC LIMIT $2)`,
          [row.repository, this.#raw.kept],
        );
      }
      return toScan(finished);
    });
  }

  async knownRepositories(): Promise<string[]> {
    const rows = await this.#q<{ repository: string }>('SELECT DISTINCT repository FROM scans');
    return sortTags(rows.map((r) => r.repository));
  }

  async #oneScan(sql: string, params: unknown[]): Promise<ScanRecord | null> {
    const r = await this.#q<ScanRow>(sql, params);
    return r[0] ? toScan(r[0]) : null;
  }

  async lastScan(repository: string): Promise<ScanRecord | null> {
    return this.#oneScan('SELECT * FROM scans WHERE repository = $1 ORDER BY id DESC LIMIT 1', [repository]);
  }

  async lastFinishedScan(repository: string): Promise<ScanRecord | null> {
    return this.#oneScan(
      "SELECT * FROM scans WHERE repository = $1 AND outcome <> 'running' ORDER BY id DESC LIMIT 1",
      [repository],
    );
  }

  async lastGoodScan(repository: string): Promise<ScanRecord | null> {
    return this.#oneScan(
      "SELECT * FROM scans WHERE repository = $1 AND outcome = 'ok' ORDER BY id DESC LIMIT 1",
      [repository],
    );
  }

  async latestScans(repositories: readonly string[]): Promise<Map<string, LatestScans>> {
    const out = new Map<string, LatestScans>(repositories.map((r) => [r, { finished: null, good: null }]));
    if (repositories.length === 0) return out;
    const rows = await this.#q<ScanRow & { which: 'finished' | 'good' }>(
      `(SELECT DISTINCT ON (repository) 'finished' AS which, * FROM scans
         WHERE repository = ANY($1::text[]) AND outcome <> 'running' ORDER BY repository, id DESC)
       UNION ALL
       (SELECT DISTINCT ON (repository) 'good' AS which, * FROM scans
         WHERE repository = ANY($1::text[]) AND outcome = 'ok' ORDER BY repository, id DESC)`,
      [repositories],
    );
    for (const { which, ...row } of rows) {
      const entry = out.get(row.repository);
      if (entry) entry[which] = toScan(row);
    }
    return out;
  }

  async getScan(id: number): Promise<ScanRecord | null> {
    return this.#oneScan('SELECT * FROM scans WHERE id = $1', [id]);
  }

  async scanHistory(repository: string, limit = 20): Promise<ScanRecord[]> {
    const rows = await this.#q<ScanRow>(
      'SELECT * FROM scans WHERE repository = $1 ORDER BY id DESC LIMIT $2',
      [repository, limitOf(limit, 20)],
    );
    return rows.map(toScan);
  }

  async currentTags(repository: string): Promise<string[]> {
    return (await this.currentTagsOf([repository])).get(repository) ?? [];
  }

  async currentTagsOf(repositories: readonly string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>(repositories.map((r) => [r, []]));
    if (repositories.length === 0) return out;
    const rows = await this.#q<{ repository: string; tag: string }>(
      `WITH good AS (
         SELECT DISTINCT ON (repository) repository, image, id FROM scans
         WHERE repository = ANY($1::text[]) AND outcome = 'ok' ORDER BY repository, id DESC)
       SELECT t.repository, t.tag FROM tags t
       JOIN good g ON t.repository = g.repository AND t.image = g.image AND t.last_scan_id = g.id`,
      [repositories],
    );
    for (const r of rows) out.get(r.repository)?.push(r.tag);
    // Code-unit order, as the checksum defines it: not the database's collation.
    for (const [k, v] of out) out.set(k, sortTags(v));
    return out;
  }

  async tagInfo(repository: string, tag: string): Promise<TagInfo | null> {
    const rows = await this.#q<TagRow>(
      `WITH good AS (
         SELECT image FROM scans WHERE repository = $1 AND outcome = 'ok' ORDER BY id DESC LIMIT 1)
       SELECT t.tag, t.first_seen, t.last_seen, t.initial, d.digest FROM tags t
       JOIN good g ON t.image = g.image
       LEFT JOIN tag_digests d ON d.repository = t.repository AND d.tag = t.tag
       WHERE t.repository = $1 AND t.tag = $2`,
      [repository, tag],
    );
    return rows[0] ? toTagInfo(rows[0]) : null;
  }

  async currentTagInfos(repository: string): Promise<({ tag: string } & TagInfo)[]> {
    const rows = await this.#q<TagRow>(
      `WITH good AS (
         SELECT image, id FROM scans WHERE repository = $1 AND outcome = 'ok' ORDER BY id DESC LIMIT 1)
       SELECT t.tag, t.first_seen, t.last_seen, t.initial, d.digest FROM tags t
       JOIN good g ON t.image = g.image AND t.last_scan_id = g.id
       LEFT JOIN tag_digests d ON d.repository = t.repository AND d.tag = t.tag
       WHERE t.repository = $1`,
      [repository],
    );
    const byTag = new Map(rows.map((r) => [r.tag, r]));
    return sortTags(byTag.keys()).map((tag) => ({ tag, ...toTagInfo(byTag.get(tag)!) }));
  }

  async rawResponses(repository: string, scanId?: number): Promise<RawScanResponses[]> {
    const rows = await this.#q<RawResponsesRow>(
      `SELECT r.scan_id, r.body, r.truncated, s.started_at, s.outcome FROM raw_responses r
       JOIN scans s ON s.id = r.scan_id
       WHERE r.repository = $1 AND ($2::bigint IS NULL OR r.scan_id = $2) ORDER BY r.scan_id DESC`,
      [repository, scanId ?? null],
    );
    return rows.map(toRawResponses);
  }

  async setTagDigest(repository: string, tag: string, digest: string, at: Date = new Date()): Promise<void> {
    await this.write({ tagDigests: [{ repository, tag, digest, at }] });
  }

  // ---------------------------------------------------------------- build times

  buildTimeCache(): BuildTimeCache {
    return {
      get: async (digest: string): Promise<BuildTime | null | undefined> => {
        const r = (
          await this.#q<{ created: number | null; source: string | null }>(
            'SELECT created, source FROM build_times WHERE digest = $1',
            [digest],
          )
        )[0];
        if (!r) return undefined;
        if (r.created === null) return null;
        return { digest, created: date(r.created), source: r.source ?? 'unknown' };
      },
      set: async (digest: string, value: BuildTime | null): Promise<void> => {
        await this.#q(
          `INSERT INTO build_times (digest, created, source) VALUES ($1, $2, $3)
           ON CONFLICT (digest) DO UPDATE SET created = excluded.created, source = excluded.source`,
          [digest, value ? ms(value.created) : null, value ? value.source : null],
        );
      },
    };
  }

  // ---------------------------------------------------------------- policies

  async getPolicyState(policy: string): Promise<PolicyState | null> {
    return (await this.policyStates([policy])).get(policy) ?? null;
  }

  async policyStates(policies: readonly string[]): Promise<Map<string, PolicyState>> {
    const out = new Map<string, PolicyState>();
    if (policies.length === 0) return out;
    const rows = await this.#q<PolicyStateRow>('SELECT * FROM policy_state WHERE policy = ANY($1::text[])', [
      policies,
    ]);
    for (const r of rows) out.set(r.policy, toPolicyState(r));
    return out;
  }

  async setPolicyState(policy: string, state: PolicyState): Promise<void> {
    await this.write({ policyStates: [{ policy, state }] });
  }

  async recordSelection(
    policy: string,
    at: Date,
    candidate: string | null,
    error: string | null,
  ): Promise<number> {
    const r = await this.#q<{ id: number }>(
      'INSERT INTO selections (policy, at, candidate, error) VALUES ($1, $2, $3, $4) RETURNING id',
      [policy, ms(at), candidate, error],
    );
    return r[0]!.id;
  }

  async selectionHistory(policy: string, limit = 20): Promise<SelectionRecord[]> {
    const rows = await this.#q<SelectionRow>(
      'SELECT * FROM selections WHERE policy = $1 ORDER BY id DESC LIMIT $2',
      [policy, limitOf(limit, 20)],
    );
    return rows.map(toSelection);
  }

  async latestSelections(policies: readonly string[]): Promise<Map<string, SelectionRecord>> {
    const out = new Map<string, SelectionRecord>();
    if (policies.length === 0) return out;
    const rows = await this.#q<SelectionRow>(
      'SELECT DISTINCT ON (policy) * FROM selections WHERE policy = ANY($1::text[]) ORDER BY policy, id DESC',
      [policies],
    );
    for (const r of rows) out.set(r.policy, toSelection(r));
    return out;
  }

  // ---------------------------------------------------------------- runs and decisions

  async beginRun(at: Date, kind: RunKind): Promise<number> {
    const r = await this.#q<{ id: number }>('INSERT INTO runs (at, kind) VALUES ($1, $2) RETURNING id', [
      ms(at),
      kind,
    ]);
    return r[0]!.id;
  }

  async recordDecision(runId: number, d: Decision): Promise<number> {
    return this.#tx(async (c) => (await insertDecisions(c, runId, [d]))[0]!);
  }

  async finishRun(runId: number, result: unknown, endedAt: Date = new Date()): Promise<void> {
    await this.write({ finishRun: { runId, result, endedAt } });
  }

  async getRun(runId: number): Promise<RunRecord | null> {
    const r = (await this.#q<RunRow>('SELECT * FROM runs WHERE id = $1', [runId]))[0];
    if (!r) return null;
    return toRun(r);
  }

  async decisions(filter: DecisionFilter = {}): Promise<DecisionRecord[]> {
    const rows = await this.#q<DecisionRow>(
      `SELECT d.*, r.at AS run_at, r.kind AS run_kind FROM decisions d JOIN runs r ON r.id = d.run_id
       WHERE ($1::text IS NULL OR d.policy = $1) AND ($2::bigint IS NULL OR d.run_id = $2)
       ORDER BY d.id DESC LIMIT $3`,
      [filter.policy ?? null, filter.runId ?? null, limitOf(filter.limit, 100)],
    );
    return rows.map(toDecision);
  }

  // ---------------------------------------------------------------- events

  async recordEvent(e: PawlEvent): Promise<number> {
    return this.#tx(async (c) => (await insertEvents(c, [e]))[0]!);
  }

  async events(filter: EventFilter = {}): Promise<EventRecord[]> {
    const rows = await this.#q<EventRow>(
      `SELECT * FROM events WHERE ($1::text IS NULL OR kind = $1) AND ($2::text IS NULL OR policy = $2)
         AND ($3::text IS NULL OR repository = $3) AND ($4::bigint IS NULL OR at >= $4)
       ORDER BY id DESC LIMIT $5`,
      [
        filter.kind ?? null,
        filter.policy ?? null,
        filter.repository ?? null,
        filter.since ? ms(filter.since) : null,
        limitOf(filter.limit, 100),
      ],
    );
    return rows.map(toEvent);
  }

  async latestEvents(kind: string, policies: readonly string[]): Promise<Map<string, EventRecord>> {
    const out = new Map<string, EventRecord>();
    if (policies.length === 0) return out;
    const rows = await this.#q<EventRow & { policy: string }>(
      `SELECT DISTINCT ON (policy) * FROM events WHERE kind = $1 AND policy = ANY($2::text[])
       ORDER BY policy, id DESC`,
      [kind, policies],
    );
    for (const r of rows) out.set(r.policy, toEvent(r));
    return out;
  }

  // ---------------------------------------------------------------- batches

  /** One transaction, one statement per kind of record (arrays through `unnest`). */
  async write(batch: StoreWrite): Promise<void> {
    const digests = batch.tagDigests ?? [];
    const states = batch.policyStates ?? [];
    const selections = batch.selections ?? [];
    const decisions = batch.decisions?.decisions ?? [];
    const events = batch.events ?? [];
    if (
      !digests.length &&
      !states.length &&
      !selections.length &&
      !decisions.length &&
      !events.length &&
      !batch.finishRun
    )
      return;
    await this.#tx(async (c) => {
      if (digests.length > 0) {
        // The last word on a tag wins, as one upsert after another would have it.
        const last = new Map(digests.map((d) => [`${d.repository}\n${d.tag}`, d]));
        const rows = [...last.values()];
        await c.query(
          `INSERT INTO tag_digests (repository, tag, digest, at)
           SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[])
           ON CONFLICT (repository, tag) DO UPDATE SET digest = excluded.digest, at = excluded.at`,
          [
            rows.map((d) => d.repository),
            rows.map((d) => d.tag),
            rows.map((d) => d.digest),
            rows.map((d) => ms(d.at)),
          ],
        );
      }
      if (states.length > 0) {
        const rows = [...new Map(states.map((s) => [s.policy, s])).values()];
        await c.query(
          `INSERT INTO policy_state (policy, spec_hash, high_water, high_water_at, pending)
           SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[])
           ON CONFLICT (policy) DO UPDATE SET spec_hash = excluded.spec_hash, high_water = excluded.high_water,
             high_water_at = excluded.high_water_at, pending = excluded.pending`,
          [
            rows.map((s) => s.policy),
            rows.map((s) => s.state.specHash),
            rows.map((s) => s.state.highWater),
            rows.map((s) => (s.state.highWaterAt ? ms(s.state.highWaterAt) : null)),
            rows.map((s) => pendingJson(s.state)),
          ],
        );
      }
      if (selections.length > 0) {
        await c.query(
          `INSERT INTO selections (policy, at, candidate, error)
           SELECT policy, at, candidate, error
           FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[]) WITH ORDINALITY AS x(policy, at, candidate, error, n)
           ORDER BY n`,
          [
            selections.map((s) => s.policy),
            selections.map((s) => ms(s.at)),
            selections.map((s) => s.candidate),
            selections.map((s) => s.error),
          ],
        );
      }
      if (decisions.length > 0) await insertDecisions(c, batch.decisions!.runId, decisions);
      if (events.length > 0) await insertEvents(c, events);
      const f = batch.finishRun;
      if (f)
        await c.query('UPDATE runs SET ended_at = $1, result = $2 WHERE id = $3', [
          ms(f.endedAt),
          JSON.stringify(f.result ?? null),
          f.runId,
        ]);
    });
  }
}

/** The previous good scan of the image and its tags, in one round trip; null when there is none. */
async function previousGood(
  c: Q,
  repository: string,
  image: string,
  before: number,
): Promise<{ id: number; tags: string[] } | null> {
  const r = await c.query<{ id: number; tag: string | null }>(
    `WITH prev AS (
       SELECT id FROM scans WHERE repository = $1 AND image = $2 AND outcome = 'ok' AND id < $3
       ORDER BY id DESC LIMIT 1)
     SELECT prev.id, t.tag FROM prev
     LEFT JOIN tags t ON t.repository = $1 AND t.image = $2 AND t.last_scan_id = prev.id`,
    [repository, image, before],
  );
  const first = r.rows[0];
  if (!first) return null;
  return { id: first.id, tags: sortTags(r.rows.flatMap((x) => (x.tag === null ? [] : [x.tag]))) };
}

/** Inserts in the given order (ids ascending), returning the ids. */
async function insertDecisions(c: Q, runId: number, ds: readonly Decision[]): Promise<number[]> {
  const col = <K extends keyof Decision>(k: K) => ds.map((d) => d[k]);
  const r = await c.query<{ id: number }>(
    `INSERT INTO decisions (run_id, automation, file, line, setter, policy, current, candidate, reason, detail, action)
     SELECT $1, automation, file, line, setter, policy, current, candidate, reason, detail, action
     FROM unnest($2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[])
       WITH ORDINALITY AS x(automation, file, line, setter, policy, current, candidate, reason, detail, action, n)
     ORDER BY n RETURNING id`,
    [
      runId,
      col('automation'),
      col('file'),
      col('line'),
      col('setter'),
      col('policy'),
      col('current'),
      col('candidate'),
      col('reason'),
      col('detail'),
      col('action'),
    ],
  );
  return r.rows.map((x) => x.id);
}

async function insertEvents(c: Q, es: readonly PawlEvent[]): Promise<number[]> {
  const r = await c.query<{ id: number }>(
    `INSERT INTO events (at, kind, policy, repository, detail)
     SELECT at, kind, policy, repository, detail
     FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS x(at, kind, policy, repository, detail, n)
     ORDER BY n RETURNING id`,
    [
      es.map((e) => ms(e.at)),
      es.map((e) => e.kind),
      es.map((e) => e.policy ?? null),
      es.map((e) => e.repository ?? null),
      es.map((e) => JSON.stringify(e.detail ?? {})),
    ],
  );
  return r.rows.map((x) => x.id);
}
