/** Loading, validating and resolving the configuration objects (SPEC §2). */
export {
  loadConfig,
  loadConfigOrThrow,
  emptyConfig,
  KIND_NAMES,
  configMapOf,
  type LoadResult,
} from './load.js';
export { configFiles } from './files.js';
export { parseDuration, formatDuration } from './duration.js';
export { resolveObject, selectPolicies } from './resolve.js';
export * from './types.js';
