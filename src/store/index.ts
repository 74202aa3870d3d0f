export { openSqliteStore, openSqliteFile, SqliteStore, DB_FILE, SCHEMA_VERSION } from './sqlite.js';
export {
  openPostgresStore,
  PostgresStore,
  PG_SCHEMA_VERSION,
  displayUrl,
  postgresClientConfig,
  migratePostgres,
  quoteIdent,
  type PostgresStoreOptions,
  type MigrationSet,
} from './postgres/index.js';
export { openStoreFrom, parseStoreSpec, type StoreSpec, type OpenStoreOptions } from './open.js';
export { StoreUnavailableError, type StoreUnavailableReason } from './errors.js';
export { STALE_RUNNING_SCAN_MS } from './rows.js';
export { storeOptionsFromEnv } from './options.js';
export { sortTags, tagListChecksum } from './tags.js';
export type * from './types.js';
