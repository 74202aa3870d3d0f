export { openSqliteStore, openSqliteFile, DB_FILE, SCHEMA_VERSION } from './sqlite/open.js';
export { SqliteStore } from './sqlite/store.js';
// The PostgreSQL backend is loaded on first use (`loadPostgres`): commands on SQLite never load `pg`.
export { loadPostgres, openPostgresStore } from './open.js';
export type { PostgresStore, PostgresStoreOptions } from './postgres/index.js';
export { migratePostgres, quoteIdent, type MigrationSet } from './postgres/migrate.js';
export { displayUrl } from './postgres/url.js';
export { openStoreFrom, parseStoreSpec, type StoreSpec, type OpenStoreOptions } from './open.js';
export { StoreUnavailableError, type StoreUnavailableReason } from './errors.js';
export { STALE_RUNNING_SCAN_MS } from './rows.js';
export { storeOptionsFromEnv } from './options.js';
export { sortTags, tagListChecksum } from './tags.js';
export type * from './types.js';
