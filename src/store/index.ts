export {
  openStore,
  storeOptionsFromEnv,
  Store,
  DB_FILE,
  SCHEMA_VERSION,
  STALE_RUNNING_SCAN_MS,
} from './store.js';
export { sortTags, tagListChecksum } from './tags.js';
export type * from './types.js';
