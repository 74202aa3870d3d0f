/** Opening the SQLite store: the file, its pragmas, its migrations, and the statement cache. */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { RuntimeError, UsageError, errorMessage } from '../../util/index.js';
import { storeOptionsFromEnv } from '../options.js';
import { pendingSteps } from '../schema.js';
import type { StoreOptions } from '../types.js';
import { WriteGroups } from './group.js';
import { MIGRATIONS } from './migrations.js';
import { SqliteStore } from './store.js';

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
  const location = file === ':memory:' ? file : resolve(file);
  const groups = new WriteGroups(db, location);
  return new SqliteStore(
    withStatementCache(db, () => groups.commitOthers()),
    groups,
    location,
    options,
  );
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
  const refusal = {
    subject: `the state database ${file} has schema version`,
    advice: 'upgrade pawl, or move the database away (it only caches observations)',
  };
  for (;;) {
    const applied = db
      .transaction((): boolean => {
        const version = db.pragma('user_version', { simple: true }) as number;
        const [step] = pendingSteps(version, MIGRATIONS, refusal);
        if (step === undefined) return false;
        db.exec(step.sql);
        db.pragma(`user_version = ${step.version}`);
        return true;
      })
      .immediate();
    if (!applied) return;
  }
}
