/**
 * The PostgreSQL store's connections: pg's settings for a store URL, a small pool, and every
 * failure as the store's error (StoreUnavailableError when the server cannot be reached or
 * used), with the password scrubbed from the server's words.
 */
import pg from 'pg';
import type { PoolClient } from 'pg';
import { PawlError, Redactor, RuntimeError, errorMessage } from '../../util/index.js';
import { StoreUnavailableError } from '../errors.js';
import type { StoreOptions } from '../types.js';
import { quoteIdent } from './migrate.js';
import { displayUrl } from './url.js';

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

/** What a statement runs on: a pooled connection, or the one a transaction holds. */
export type Q = Pick<PoolClient, 'query'>;

/** The pool of one store, and how its failures read. */
export class Session {
  readonly location: string;
  readonly pool: pg.Pool;
  readonly #redactor = new Redactor();
  readonly #where: string;
  #closed = false;

  constructor(opts: PostgresStoreOptions) {
    this.location = displayUrl(opts.url);
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
    const unavailable = (what: string, reason: StoreUnavailableError['reason']) =>
      new StoreUnavailableError(what, reason, this.location);
    if (phase === 'connect') {
      if (REFUSED.has(code)) return unavailable(`${this.#where} refused pawl: ${said}`, 'refused');
      return unavailable(`cannot connect to ${this.#where}: ${said}`, 'unreachable');
    }
    if (!(err instanceof pg.DatabaseError))
      return unavailable(`lost the connection to ${this.#where}: ${said}`, 'lost');
    if (code.startsWith('08') || SERVER_GONE.has(code))
      return unavailable(`${this.#where} is unavailable: ${said}`, 'lost');
    if (code === '57014') return unavailable(`${this.#where} did not answer in time: ${said}`, 'timeout');
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

  /**
   * `fn` on one pooled connection. A connection that broke (not a database's answer, nor pawl's
   * own error) is dropped from the pool; `rollback` undoes an open transaction on the others.
   */
  async withClient<T>(fn: (c: PoolClient) => Promise<T>, rollback = false): Promise<T> {
    const c = await this.#connect();
    let broken: Error | undefined;
    try {
      return await fn(c);
    } catch (err) {
      if (!(err instanceof pg.DatabaseError) && !(err instanceof PawlError) && err instanceof Error)
        broken = err;
      else if (rollback) await c.query('ROLLBACK').catch(() => undefined);
      throw this.#error(err, 'query');
    } finally {
      c.release(broken);
    }
  }

  /** One statement on a pooled connection. */
  async q<R extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<R[]> {
    return this.withClient(async (c) => (await c.query<R>(sql, params)).rows);
  }

  /** A transaction on one connection: committed when `fn` resolves, rolled back when it throws. */
  async tx<T>(fn: (c: Q) => Promise<T>): Promise<T> {
    return this.withClient(async (c) => {
      await c.query('BEGIN');
      const out = await fn(c);
      await c.query('COMMIT');
      return out;
    }, true);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.pool.end();
  }
}
