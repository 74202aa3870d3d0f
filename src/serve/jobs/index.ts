/** The daemon's jobs: one module per kind, the leases they run under, their queued webhook work. */
export { automationJob, repositoryJob, type JobContext, type JobRuns } from './types.js';
export { JobLeases, type Claimed, type JobLeasesDeps, type SkipReason } from './leases.js';
export { SettleRetries } from './settle.js';
export { BatchWakes } from './batch-wakes.js';
export { publishWebhook } from './work.js';
export { RepositoryJobs, type RepositoryJobContext } from './repository.js';
export { AutomationJobs, type AutomationJobContext } from './automation.js';
