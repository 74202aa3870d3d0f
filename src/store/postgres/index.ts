export {
  openPostgresStore,
  PostgresStore,
  PG_SCHEMA_VERSION,
  displayUrl,
  postgresClientConfig,
  type PostgresStoreOptions,
} from './store.js';
export { migratePostgres, quoteIdent, type MigrationSet } from './migrate.js';
