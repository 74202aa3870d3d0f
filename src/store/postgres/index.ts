export {
  openPostgresStore,
  PostgresStore,
  PG_SCHEMA_VERSION,
  postgresClientConfig,
  type PostgresStoreOptions,
} from './store.js';
export { migratePostgres, quoteIdent, type MigrationSet } from './migrate.js';
export { displayUrl } from './url.js';
