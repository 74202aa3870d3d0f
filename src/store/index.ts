export {
  openStore,
  storeOptionsFromEnv,
  Store,
  DB_FILE,
  SCHEMA_VERSION,
  STALE_RUNNING_SCAN_MS,
} from './store.js';
export {
  diffTags,
  tagListChecksum,
  sortTags,
  describeAnomaly,
  abbreviate,
  COUNT_DROP_MIN_RATIO,
  COUNT_DROP_MIN_TAGS,
} from './diff.js';
export type * from './types.js';
