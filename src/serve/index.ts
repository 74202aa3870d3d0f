/**
 * `pawl serve`: the daemon's composition root (daemon.ts), its configuration source (source/),
 * one job module per kind (jobs/), the scheduler core (scheduler.ts), the webhook route and the
 * admin endpoints (http.ts, api.ts) over a read-only view (view.ts), metrics and the in-process
 * event seam (events.ts).
 */
import { Daemon, type ServeOptions } from './daemon.js';
import { AdminAuth, logDashboard, prepareDashboard } from './dashboard/index.js';
import {
  ADMIN_SERVER,
  LazyListener,
  parseListen,
  receiverServer,
  type ReceiverServerOptions,
} from './listener.js';
import { errorMessage, UsageError } from '../util/index.js';

export { Daemon, type ServeOptions } from './daemon.js';
export type { KubernetesOptions } from './source/index.js';
export { automationJob, repositoryJob } from './jobs/index.js';
export type { ReloadOutcome } from './source/index.js';
export type { DaemonView } from './view.js';
export { ServeEvents, type PassEvent, type ScanEvent } from './events.js';
export { ServeMetrics } from './metrics.js';
export {
  Scheduler,
  systemClock,
  type Clock,
  type JobSpec,
  type JobStatus,
  type RunContext,
  type RunResult,
} from './scheduler.js';
export { parseListen } from './listener.js';
export { AdminAuth, dashboardUrl, locateWeb, type WebSource } from './dashboard/index.js';
export { forgeCommitUrl, markerState, overview, timeline } from './dashboard/index.js';
export { createServeLogger, LogOutput } from './log.js';

export const DEFAULT_LISTEN = ':9292';
export const DEFAULT_ADMIN_LISTEN = '127.0.0.1:9293';
export const DEFAULT_GRACE_PERIOD_MS = 30_000;
/**
 * How long after the first pass the listeners' apps are built if no request has built them, and
 * the optimizer comes on: not at the pass's very end, where its last records, metrics and events
 * are still being handled (the tail of the burst, not worth optimizing).
 */
const AFTER_START_MS = 1_000;

export interface Server {
  daemon: Daemon;
  /** Where the receivers and the admin endpoints listen (`host:port`, ports resolved). */
  listen: string;
  admin: string;
  /** Settles a second after the daemon's first pass (Daemon.startDone), or once it stops. */
  started: Promise<void>;
  /** The two listeners (tests read whether their apps are built). */
  hooks: LazyListener;
  adminListener: LazyListener;
  /** Stop taking work, let runs finish within `graceMs`, close the listeners. */
  stop(graceMs: number): Promise<'finished' | 'abandoned'>;
}

export interface StartOptions extends ServeOptions {
  listen?: string;
  adminListen?: string;
  receivers?: ReceiverServerOptions;
  /** A file holding the admin token; required when `adminListen` is not loopback. */
  adminTokenFile?: string;
  /** A directory holding the built dashboard (default: see locateWeb). */
  webDir?: string;
}

/** Loopback addresses only: anything else is "exposed" and needs the admin token. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

export async function startServer(opts: StartOptions): Promise<Server> {
  const listenAddr = parseListen(opts.listen ?? DEFAULT_LISTEN);
  const adminAddr = parseListen(opts.adminListen ?? DEFAULT_ADMIN_LISTEN);
  if (!isLoopback(adminAddr.host) && !opts.adminTokenFile)
    throw new UsageError(
      `--admin-listen ${opts.adminListen} is not a loopback address: the dashboard and the JSON API would be open to the network; give --admin-token-file FILE (or listen on 127.0.0.1)`,
    );
  let auth: AdminAuth | null = null;
  if (opts.adminTokenFile) {
    try {
      auth = await AdminAuth.fromFile(opts.adminTokenFile);
    } catch (err) {
      throw new UsageError(errorMessage(err));
    }
  }
  const dashboard = await prepareDashboard({ auth, ...(opts.webDir ? { webDir: opts.webDir } : {}) });
  const daemon = await Daemon.start(opts);
  const { view, log } = daemon;
  // The apps (fastify and its routes, http.ts, imported only then) are built on the first
  // request or once the first pass is done (listener.ts); the sockets are bound now.
  const hooks = new LazyListener({
    name: 'webhooks',
    server: receiverServer(opts.receivers),
    log,
    build: async (attach) => (await import('./http.js')).receiverApp(view, opts.receivers, attach),
  });
  const admin = new LazyListener({
    name: 'admin',
    server: ADMIN_SERVER,
    log,
    build: async (attach) => (await import('./http.js')).adminApp(view, dashboard, attach),
  });
  try {
    const listenAt = await hooks.listen(listenAddr);
    const adminAt = await admin.listen(adminAddr);
    daemon.log.info({ listen: listenAt, admin: adminAt }, 'listening');
    logDashboard(daemon.log, dashboard, adminAt);
    const started = daemon.startDone.then(
      () => new Promise<void>((resolve) => setTimeout(resolve, AFTER_START_MS).unref()),
    );
    // Built soon after the first pass, so that a webhook later does not wait for the build.
    void started.then(() => hooks.warm().then(() => admin.warm()));
    return {
      daemon,
      listen: listenAt,
      admin: adminAt,
      hooks,
      adminListener: admin,
      started,
      async stop(graceMs) {
        // Webhooks first: a sender gets 503 (and retries later) rather than work that will not run.
        const closing = hooks.close();
        const outcome = await daemon.shutdown(graceMs);
        await Promise.race([closing, new Promise((r) => setTimeout(r, 1000).unref())]);
        await admin.close();
        return outcome;
      },
    };
  } catch (err) {
    await Promise.all([hooks.close(), admin.close()]);
    await daemon.shutdown(0);
    throw err;
  }
}
