/**
 * What the listeners read of the daemon (http.ts, api.ts, dashboard.ts), as the dashboard's
 * DashboardSource does for its views: nothing here changes the daemon. The webhook listener
 * may also queue a webhook's work (ListenerView).
 */
import type { Store } from '../store/index.js';
import type { CommandSpeller, Logger } from '../util/index.js';
import type { Coordinator } from './cluster/index.js';
import type { LastPass, ServeEvents } from './events.js';
import type { SkipReason } from './jobs/index.js';
import type { ServeMetrics } from './metrics.js';
import type { JobStatus } from './scheduler.js';
import type { LoadedConfig, ReloadOutcome } from './source/index.js';
import type { WebhookSink } from './webhooks.js';
import type { ReconcileSink } from './reconcile.js';

/** The coordinator's read side: who this replica is, who else is alive, what it holds. */
export type CoordinatorView = Pick<
  Coordinator,
  | 'kind'
  | 'replicaId'
  | 'healthy'
  | 'lastHeartbeat'
  | 'leaseTtlMs'
  | 'heartbeatMs'
  | 'replicas'
  | 'claims'
  | 'owns'
>;

export interface DaemonView {
  readonly log: Logger;
  /** Counted by the listeners (webhooks) and served at /metrics. */
  readonly metrics: ServeMetrics;
  /** Scans and passes as they happen, for the dashboard's stream. */
  readonly events: Pick<ServeEvents, 'onScan' | 'onReport'>;
  /** Read only: the API and the dashboard never write. */
  readonly store: Store;
  readonly stateDir: string;
  readonly configPaths: readonly string[];
  /** Spells the commands the API and the dashboard offer, with the daemon's own -c and --state-dir. */
  readonly command: CommandSpeller;
  readonly dryRun: boolean;
  readonly startedAt: Date;
  /** Taking work: not stopping, the database (with several replicas) answers, and some automation runs. */
  readonly ready: boolean;
  /** Why the configuration keeps this daemon not ready (every automation skipped); null when it does not. */
  readonly unready: string | null;
  /** Why the store cannot be written now (a full disk), or null: not ready while it lasts. */
  readonly unwritable: string | null;
  readonly stopping: boolean;
  /** The running configuration (a reload replaces it). */
  readonly current: LoadedConfig;
  readonly lastReload: ReloadOutcome;
  /** Last pass of each automation. */
  readonly lastPass: ReadonlyMap<string, LastPass>;
  readonly coordinator: CoordinatorView;
  /** The scheduler's view of one job, or every job. */
  job(key: string): JobStatus | null;
  jobs(): JobStatus[];
  /** Why the job's last run did nothing (another replica's turn or lease), or null. */
  skipped(key: string): SkipReason | null;
}

/** The admin listener's one action: asking a job to run now (`pawl reconcile`), through the work queue. */
export type AdminView = DaemonView & ReconcileSink;

/** What the daemon hands its listeners: the view, queueing an accepted webhook's work, reconcile. */
export type ListenerView = AdminView & WebhookSink;
