export { openSqliteStore, openSqliteFile, SqliteStore, DB_FILE, SCHEMA_VERSION } from './sqlite.js';
export { STALE_RUNNING_SCAN_MS } from './rows.js';
export { storeOptionsFromEnv } from './options.js';
export { sortTags, tagListChecksum } from './tags.js';
export type * from './types.js';
