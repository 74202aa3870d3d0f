/** Configuration: Flux's objects read from YAML, checked, and resolved by name. */
export * from './types.js';
export {
  KIND_NAMES,
  configMapOf,
  emptyConfig,
  loadConfig,
  loadConfigOrThrow,
  loadedNothing,
  objectCount,
  objectsByFile,
  loadObjects,
  type LoadOptions,
  type LoadResult,
} from './load.js';
export { DEFAULT_LIMITS, type SizeLimits } from './limits.js';
export { providerHeaders, type HeadersResult } from './headers.js';
export { dependencyProblems, type SkippedObject } from './skip.js';
export { resolveObject, matchesSelector, selectPolicies } from './resolve.js';
export { parseDuration, formatDuration } from './duration.js';
export { imagePolicySchema } from './schema/imagepolicy.js';
export { imageRepositoryProblem, isDigest } from './imageref.js';
export {
  checkCommitMessageTemplate,
  DEFAULT_MESSAGE_TEMPLATE,
  fluxTemplateData,
  parseCommitMessageTemplate,
  renderCommitMessage,
  TEMPLATE_NAME,
  type TemplateChange,
} from './commit-data.js';
export { closest, levenshtein } from './suggest.js';
