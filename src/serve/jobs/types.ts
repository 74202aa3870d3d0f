/**
 * What a job module may touch: the running configuration (read), the store, its own runs in the
 * scheduler, the leases, the settle-retry rule, the metrics, the event seam and the log. Each
 * job kind adds the few things only it needs (repository.ts, automation.ts).
 */
import type { Store } from '../../store/index.js';
import type { Logger } from '../../util/index.js';
import type { ServeEvents } from '../events.js';
import type { ServeMetrics } from '../metrics.js';
import type { Clock, RunResult, Scheduler } from '../scheduler.js';
import type { LoadedConfig } from '../source/index.js';
import type { JobLeases } from './leases.js';
import type { SettleRetries } from './settle.js';

export const repositoryJob = (name: string): string => `ImageRepository/${name}`;
export const automationJob = (name: string): string => `ImageUpdateAutomation/${name}`;

/** The scheduler as a job sees it: ask for a run, join the one in progress. */
export type JobRuns = Pick<Scheduler, 'request' | 'requestThen' | 'joinThen' | 'isRunning'>;

export interface JobContext {
  /** The running configuration; a reload replaces it between runs. */
  config(): LoadedConfig;
  store: Store;
  runs: JobRuns;
  leases: JobLeases;
  settle: SettleRetries;
  metrics: ServeMetrics;
  events: ServeEvents;
  log: Logger;
  clock: Clock;
  /** The daemon is stopping: start nothing new. */
  stopping(): boolean;
}

export type { RunResult };
