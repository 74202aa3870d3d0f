/**
 * Which store to open (`--store`, `PAWL_STORE`), and opening it: the one factory the CLI and
 * the daemon share (docs/store.md).
 */
import { statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Redactor, UsageError } from '../util/index.js';
import { envNumber, storeOptionsFromEnv } from './options.js';
import { DB_FILE, openSqliteFile, openSqliteStore } from './sqlite/open.js';
import { displayUrl } from './postgres/url.js';
import type { PostgresStore, PostgresStoreOptions } from './postgres/index.js';
import type { Store, StoreOptions } from './types.js';

/** The PostgreSQL backend (`pg` and the store), imported on first use. */
export const loadPostgres = () => import('./postgres/index.js');

/** Opens (connects, migrates) a PostgreSQL store; see `PostgresStoreOptions`. */
export async function openPostgresStore(opts: PostgresStoreOptions): Promise<PostgresStore> {
  return (await loadPostgres()).openPostgresStore(opts);
}

export type StoreSpec =
  /** A SQLite file. */
  | { kind: 'sqlite'; file: string }
  /** A PostgreSQL database; `url` may carry a password only when it came from the environment. */
  | { kind: 'postgres'; url: string; display: string; password?: string };

const PG_SCHEMES = new Set(['postgres:', 'postgresql:']);

/**
 * Reads a store value. A `postgres://` or `postgresql://` URL is PostgreSQL; anything else is a
 * path: a directory holds `pawl.db`, anything else is the SQLite file itself. `from` says where
 * the value was written: a password is refused on the command line (others can read it in the
 * process list and the shell history), allowed in `PAWL_STORE`.
 */
export function parseStoreSpec(value: string, from: '--store' | 'PAWL_STORE'): StoreSpec {
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(value)?.[1];
  if (scheme === undefined) {
    if (value.trim() === '') throw new UsageError(`${from} is empty: give a file or a postgres:// URL`);
    const path = resolve(value);
    let isDir = false;
    try {
      isDir = statSync(path).isDirectory();
    } catch {
      // A file that does not exist yet: SQLite creates it.
    }
    return { kind: 'sqlite', file: isDir ? join(path, DB_FILE) : path };
  }
  if (!PG_SCHEMES.has(`${scheme.toLowerCase()}:`))
    throw new UsageError(
      `${from}: "${scheme}://" is not a store pawl knows; give a SQLite file or a postgres:// URL`,
    );
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    // The value may hold a password: name only what is safe to show.
    throw new UsageError(`${from}: not a valid PostgreSQL URL (postgres://USER@HOST:PORT/DATABASE)`);
  }
  if (!url.hostname)
    throw new UsageError(`${from}: ${displayUrl(value)} names no host (postgres://USER@HOST:PORT/DATABASE)`);
  const display = displayUrl(value);
  if (url.password) {
    if (from === '--store')
      throw new UsageError(
        `--store ${display}: a password on the command line is refused (anyone on this host can read it); ` +
          `use --store-password-file FILE or PAWL_STORE_PASSWORD, or put the whole URL in PAWL_STORE`,
      );
    return { kind: 'postgres', url: value, display, password: decodeURIComponent(url.password) };
  }
  return { kind: 'postgres', url: value, display };
}

export interface OpenStoreOptions extends StoreOptions {
  /** The password of a PostgreSQL store (from `--store-password-file` or `PAWL_STORE_PASSWORD`). */
  password?: string;
  /** Told the password, so logs and errors elsewhere can scrub it too. */
  redactor?: Redactor;
  /** PostgreSQL pool and timeouts. */
  postgres?: Omit<PostgresStoreOptions, 'url' | 'password' | keyof StoreOptions>;
}

/** The store a spec names; without one, `<stateDir>/pawl.db`. PostgreSQL is migrated before it is returned. */
export async function openStoreFrom(
  spec: StoreSpec | { kind: 'state-dir'; stateDir: string },
  opts: OpenStoreOptions = {},
): Promise<Store> {
  const { password, redactor, postgres, ...rest } = opts;
  const options: StoreOptions = { ...storeOptionsFromEnv(), ...rest };
  switch (spec.kind) {
    case 'state-dir':
      return openSqliteStore(spec.stateDir, options);
    case 'sqlite':
      return openSqliteFile(spec.file, options);
    case 'postgres': {
      const pw = password ?? spec.password;
      if (pw !== undefined) {
        redactor?.add(pw);
        redactor?.add(encodeURIComponent(pw));
      }
      return openPostgresStore({
        ...options,
        ...poolFromEnv(),
        ...postgres,
        url: spec.url,
        ...(pw !== undefined ? { password: pw } : {}),
      });
    }
  }
}

function poolFromEnv(env: NodeJS.ProcessEnv = process.env): {
  poolSize?: number;
  statementTimeoutMs?: number;
} {
  const out: { poolSize?: number; statementTimeoutMs?: number } = {};
  const read = (name: string, min: number) => envNumber(env, name, min);
  const size = read('PAWL_STORE_POOL_SIZE', 1);
  const timeout = read('PAWL_STORE_STATEMENT_TIMEOUT_MS', 100);
  if (size !== undefined) out.poolSize = size;
  if (timeout !== undefined) out.statementTimeoutMs = timeout;
  return out;
}
