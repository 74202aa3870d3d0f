export { openPostgresStore, PostgresStore, PG_SCHEMA_VERSION } from './store.js';
export { postgresClientConfig, type PostgresStoreOptions } from './session.js';
export { migratePostgres, quoteIdent, type MigrationSet } from './migrate.js';
export { displayUrl } from './url.js';
