/** One pass of the pipeline, and the people's commands (rollback, release, explain). */
export * from './pass.js';
export * from './explain.js';
export * from './people.js';
export type * from './report.js';
export * from './markers.js';
export * from './suspend.js';
export { evaluatePolicy, FactsBook, type PolicyDeps, type PolicyOutcome } from './policies.js';
export { OutcomeCache } from './outcome-cache.js';
export { SecretPrints } from './secret-prints.js';
