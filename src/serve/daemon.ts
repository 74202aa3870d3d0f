/**
 * `pawl serve` (SPEC §6, issue 11): the composition root. It opens the store, the lock and the
 * coordinator, wires the configuration source, the scheduler and one job module per kind
 * (jobs/), and stops them in order. Everything that touches the process (signals, exit) is the
 * CLI's; what each part does is in its own file (docs/architecture.md).
 */
import { resolve } from 'node:path';
import type { LoadOptions } from '../config/index.js';
import type { Store, StoreSpec } from '../store/index.js';
import { commandSpeller, Slots, type Logger } from '../util/index.js';
import { ServeEvents } from './events.js';
import { DaemonAlerts, type DaemonAlertsOptions } from './alerts.js';
import { ServeMetrics } from './metrics.js';
import { Scheduler, systemClock, type Clock, type JobSpec } from './scheduler.js';
import type { Coordinator } from './cluster/index.js';
import { configUnready } from './readiness.js';
import { openShared, type Shared } from './open.js';
import { daemonBridge, type KubeBridge } from './kube.js';
import {
  Configuration,
  FileSource,
  connectKube,
  loadFirst,
  type KubernetesOptions,
  type ConfigSource,
  type Applied,
  type LoadedConfig,
  type ReloadOutcome,
} from './source/index.js';
import {
  automationJob,
  AutomationJobs,
  JobLeases,
  publishWebhook,
  RepositoryJobs,
  SettleRetries,
} from './jobs/index.js';
import type { ListenerView } from './view.js';
import { reconcile } from './reconcile.js';

export interface ServeOptions {
  configPaths: string[];
  stateDir: string;
  log: Logger;
  /** Compute everything, write nothing (running beside Flux before taking over). */
  dryRun?: boolean;
  /**
   * Refuse to start when any object is invalid (`--strict`). Without it the daemon starts with
   * the valid objects, as `pawl run` does, and names the skipped ones; a reload is all or nothing
   * either way.
   */
  strict?: boolean;
  /** Reload when a configuration file changes. Default true. */
  watch?: boolean;
  /** Debounce of configuration file changes, ms. */
  watchDebounceMs?: number;
  /** Scans running at once across all repositories (the registry client limits each registry further). */
  scanConcurrency?: number;
  /** Automation passes running at once (each runs git); default 4. */
  passConcurrency?: number;
  /** Outer bound of one automation pass; default 10 minutes. */
  automationTimeoutMs?: number;
  clock?: Clock;
  random?: () => number;
  /** Spread of the first runs after start, ms (default 5s; 0 runs everything due at once). */
  startSpreadMs?: number;
  metrics?: ServeMetrics;
  /** Builds the alerts' notifier (tests give it a transport or a sleep they control). */
  notifier?: DaemonAlertsOptions['notifier'];
  /**
   * How this replica shares work with others (docs/replicas.md). Default: a LocalCoordinator,
   * one process doing everything, or — with a PostgreSQL store — a PostgresCoordinator on the
   * same database. The daemon starts it and closes it.
   */
  coordinator?: Coordinator;
  /** Opens the store (`--store`: the CLI's `openCommandStore`); default `stateDir/pawl.db`. */
  openStore?: () => Promise<Store>;
  /**
   * Which store `openStore` opens (the CLI's `commandStoreSpec`), and the PostgreSQL password:
   * a SQLite file is locked for this daemon; a PostgreSQL database makes it a replica.
   */
  storeSpec?: StoreSpec | { kind: 'state-dir'; stateDir: string };
  storePassword?: string;
  /**
   * Where Secrets that are not in the `-c` files are found (`--secrets-dir`, `PAWL_SECRET_*`), as
   * every command gives them to the loader; used at start and on each reload.
   */
  loadOptions?: LoadOptions;
  /** Replicas on PostgreSQL: lease lifetime, heartbeat period, this replica's id. */
  cluster?: { leaseTtlMs?: number; heartbeatMs?: number; replicaId?: string };
  /**
   * The global options, as words, that the commands the daemon offers for copying carry (its own
   * `-c`, `--state-dir`…, so that they run as printed beside it); default: `-c` and `--state-dir`.
   */
  commandGlobals?: string[];
  /**
   * Kubernetes mode (`--kubernetes`, docs/kubernetes.md): the objects come from this API server
   * instead of `configPaths`, and their status is written back.
   */
  kubernetes?: KubernetesOptions;
}

/** What `start` opened (open.ts), and the metrics. */
interface Opened extends Shared {
  metrics: ServeMetrics;
}

export class Daemon {
  readonly log: Logger;
  /** The jobs' runs (tests read a job's status here). */
  readonly scheduler: Scheduler;
  readonly events: ServeEvents;
  /** What the listeners read, and the webhook listener's one action. */
  readonly view: ListenerView;
  readonly #opened: Opened;
  readonly #configuration: Configuration;
  readonly #alerts: DaemonAlerts;
  readonly #settle: SettleRetries;
  readonly #repositories: RepositoryJobs;
  readonly #automations: AutomationJobs;
  readonly #unsubscribe: (() => void)[] = [];
  readonly #clock: Clock;
  #kube: KubeBridge | null = null;
  #stopping: Promise<'finished' | 'abandoned'> | null = null;
  #startDone!: () => void;
  /**
   * Resolved once the start's burst of work is over: the first automation pass has ended (pushed,
   * nothing to do, or failed), or — with no automation — the first run has ended with nothing
   * else running; or the daemon stops first. What waits for the first pass (the optimizer, the
   * listeners' apps: serve/index.ts, cli/commands/serve.ts) waits for this.
   */
  readonly startDone = new Promise<void>((resolve) => (this.#startDone = resolve));

  private constructor(opts: ServeOptions, opened: Opened, source: ConfigSource, first: LoadedConfig) {
    const { store, coordinator, metrics } = opened;
    const log = opts.log;
    const clock = opts.clock ?? systemClock;
    this.#clock = clock;
    this.log = log;
    this.#opened = opened;
    metrics.watchCoordinator(coordinator);
    const events = new ServeEvents(log);
    this.events = events;
    const current = () => this.#configuration.current;
    const stopping = () => this.#stopping !== null;
    this.#configuration = new Configuration(source, first, {
      log,
      metrics,
      clock,
      apply: (loaded) => this.#apply(loaded),
      stopping,
    });
    this.#alerts = new DaemonAlerts({
      config: current().config,
      events,
      store,
      metrics,
      log,
      ...(opts.notifier ? { notifier: opts.notifier } : {}),
    });
    const scheduler = new Scheduler({
      clock,
      ...(opts.random ? { random: opts.random } : {}),
      ...(opts.startSpreadMs !== undefined ? { startSpread: opts.startSpreadMs } : {}),
      onSettled: (r) => {
        metrics.passFailures.set({ job: r.key }, scheduler.status(r.key)?.failures ?? 0);
        if (
          r.key.startsWith(automationJob('')) ||
          (current().config.automations.size === 0 && scheduler.runningCount() === 0)
        )
          this.#startDone();
        if (r.error)
          log.warn({ job: r.key, error: r.error, trigger: r.trigger }, 'run failed; retrying with backoff');
      },
    });
    this.scheduler = scheduler;
    const leases = new JobLeases({
      coordinator,
      metrics,
      log,
      request: (key) => void scheduler.request(key),
    });
    this.#settle = new SettleRetries(clock);
    const job = {
      config: current,
      store,
      runs: scheduler,
      leases,
      settle: this.#settle,
      metrics,
      events,
      log,
      clock,
      stopping,
    };
    const { interrupted } = opened;
    this.#repositories = new RepositoryJobs({
      ...job,
      slots: new Slots(opts.scanConcurrency ?? 16),
      interrupted,
    });
    this.#automations = new AutomationJobs({
      ...job,
      slots: new Slots(opts.passConcurrency ?? 4),
      scans: this.#repositories,
      stateDir: opts.stateDir,
      dryRun: opts.dryRun === true,
      timeoutMs: opts.automationTimeoutMs ?? 10 * 60_000,
      interrupted,
    });
    const lastPass = this.#automations.lastPass;
    const lastReload = () => this.#configuration.lastReload;
    this.view = {
      log,
      metrics,
      events,
      store,
      stateDir: opts.stateDir,
      configPaths: opts.configPaths,
      command: commandSpeller(
        opts.commandGlobals ?? [
          ...opts.configPaths.flatMap((c) => ['-c', resolve(c)]),
          '--state-dir',
          opts.stateDir,
        ],
      ),
      dryRun: opts.dryRun === true,
      startedAt: new Date(clock.now()),
      get ready() {
        return (
          !stopping() &&
          coordinator.healthy &&
          configUnready(current()) === null &&
          (store.unwritable?.() ?? null) === null
        );
      },
      get unwritable() {
        return store.unwritable?.() ?? null;
      },
      get unready() {
        return configUnready(current());
      },
      get stopping() {
        return stopping();
      },
      get current() {
        return current();
      },
      get lastReload() {
        return lastReload();
      },
      lastPass,
      coordinator,
      job: (key) => scheduler.status(key),
      jobs: () => scheduler.statuses(),
      skipped: (key) => leases.skipped(key),
      trigger: (repositories, automations = [], tags = []) =>
        publishWebhook(coordinator, current(), clock.now(), { repositories, automations, tags }),
      reconcile: (kind, name, waitMs) =>
        reconcile(
          { config: current, coordinator, scheduler, events, skipped: (k) => leases.skipped(k), clock },
          kind,
          name,
          waitMs,
        ),
    };
  }

  /**
   * Loads the configuration, opens the store and starts every job. An invalid object is skipped
   * with what needs it and the rest runs (one bad object must not stop a fleet's automation);
   * with `strict`, or when nothing could be read at all, throws ConfigError (exit 2).
   */
  static async start(opts: ServeOptions): Promise<Daemon> {
    const metrics = opts.metrics ?? new ServeMetrics();
    const kube = opts.kubernetes ? await connectKube(opts.kubernetes, opts.log) : null;
    const source: ConfigSource = kube
      ? kube.source
      : new FileSource({
          paths: opts.configPaths,
          log: opts.log,
          ...(opts.watchDebounceMs !== undefined ? { debounceMs: opts.watchDebounceMs } : {}),
          ...(opts.loadOptions ? { loadOptions: opts.loadOptions } : {}),
        });
    let daemon: Daemon;
    try {
      const first = await loadFirst(source, { log: opts.log, metrics }, opts.strict === true);
      const { store, coordinator, lock, interrupted } = await openShared(opts);
      daemon = new Daemon(opts, { store, coordinator, lock, metrics, interrupted }, source, first);
    } catch (err) {
      source.close();
      await kube?.client.close();
      throw err;
    }
    if (kube)
      daemon.#kube = daemonBridge({
        connected: kube,
        ...(opts.kubernetes?.eventsAddr ? { eventsAddr: opts.kubernetes.eventsAddr } : {}),
        events: daemon.events,
        store: daemon.#opened.store,
        coordinator: daemon.#opened.coordinator,
        config: () => daemon.#configuration.current,
        request: (key) => void daemon.scheduler.request(key),
        dryRun: opts.dryRun === true,
        log: opts.log,
        clock: daemon.#clock,
      });
    daemon.#configuration.announceStart();
    daemon.#subscribe();
    await daemon.#repositories.readLastScans();
    const started = daemon.#applyJobs();
    daemon.#kube?.applied(daemon.#configuration.current, started);
    // Webhook work a previous process accepted (202) and did not finish runs now.
    daemon.#opened.coordinator.resume?.();
    if (opts.watch !== false) await source.watch((reason) => void daemon.reload(reason));
    const first = daemon.#configuration.current;
    opts.log.info(
      {
        ...(kube ? { kubernetes: opts.kubernetes!.connection.server } : {}),
        repositories: first.config.imageRepositories.size,
        policies: first.config.imagePolicies.size,
        automations: first.config.automations.size,
        receivers: first.config.receivers.size,
        dryRun: opts.dryRun === true,
      },
      'serving',
    );
    return daemon;
  }

  /**
   * The coordinator's wake-ups become scheduler requests: work queued for a job (here or by
   * another replica), a dead replica's interrupted runs, and — once the database returns — the
   * jobs that failed for want of it.
   */
  #subscribe(): void {
    const c = this.#opened.coordinator;
    this.#unsubscribe.push(
      c.onWork((key, source) => {
        if (this.#stopping || !this.scheduler.has(key)) return;
        // A sweep finds work that waits: a job already running or queued here will take it when
        // it claims, and a failing one with its own retry (with backoff).
        const status = this.scheduler.status(key);
        if (source === 'sweep' && status && (status.running || status.queued || status.failures > 0)) return;
        this.log.debug({ job: key, source }, 'work for this replica');
        void this.scheduler.request(key);
      }),
      ...(c.onElected
        ? [
            c.onElected(() => {
              if (this.#stopping) return;
              // Kubernetes mode re-announces on its own (kube.ts).
              this.log.info('elected: running every job now');
              for (const s of this.scheduler.statuses()) if (!s.suspended) void this.scheduler.request(s.key);
            }),
          ]
        : []),
      c.onRecovered(() => {
        if (this.#stopping) return;
        for (const s of this.scheduler.statuses())
          if (s.failures > 0 && !s.suspended && c.owns(s.key)) void this.scheduler.request(s.key);
      }),
    );
  }

  /**
   * Reads the configuration again; all or nothing (source/configuration.ts): a refused one
   * leaves the running one, with the same file:line problems as `pawl validate`.
   */
  reload(reason: string): Promise<ReloadOutcome> {
    return this.#configuration.reload(reason);
  }

  /** A new configuration became the current one: alerts, jobs, and nothing kept of removed objects. */
  async #apply(loaded: LoadedConfig): Promise<Applied> {
    const { metrics } = this.#opened;
    this.#alerts.reconfigure(loaded.config);
    await this.#repositories.readLastScans();
    const applied = this.#applyJobs();
    this.#kube?.applied(loaded, applied);
    for (const key of applied.removed) {
      const [kind, ...rest] = key.split('/');
      const name = rest.join('/');
      metrics.forget('job', key);
      if (kind === 'ImageRepository') {
        metrics.forget('repository', name);
        this.#repositories.forget(name);
      } else {
        metrics.forget('automation', name);
        this.#automations.forget(name);
      }
    }
    return applied;
  }

  #applyJobs(): Applied {
    const { config, repositoriesOf } = this.#configuration.current;
    const specs: JobSpec[] = [];
    for (const r of config.imageRepositories.values()) specs.push(this.#repositories.spec(r));
    for (const a of config.automations.values())
      specs.push(this.#automations.spec(a, config, repositoriesOf));
    return this.scheduler.set(specs);
  }

  /**
   * Stops taking work and lets runs in progress finish within `graceMs`. 'abandoned' when some
   * did not: the caller exits anyway — workspaces and commits are crash-safe, and the next start
   * fetches, resets and redoes what was left.
   */
  shutdown(graceMs: number): Promise<'finished' | 'abandoned'> {
    if (this.#stopping) return this.#stopping;
    this.#startDone();
    this.#stopping = (async () => {
      const { store, coordinator, lock } = this.#opened;
      this.scheduler.stop();
      this.#configuration.source.close();
      this.#settle.close();
      this.#automations.close();
      const running = this.scheduler.runningCount();
      if (running > 0) this.log.info({ running, graceMs }, 'stopping: waiting for runs in progress');
      let timer: NodeJS.Timeout | undefined;
      const finished = await Promise.race([
        this.scheduler.idle().then(() => true),
        new Promise<boolean>((r) => (timer = setTimeout(() => r(false), graceMs))),
      ]);
      clearTimeout(timer);
      if (!finished) {
        this.log.warn(
          { running: this.scheduler.runningCount() },
          'stopping: grace period over; abandoning runs in progress (the next start completes them)',
        );
        // The process exits now: the lock goes, and this replica's leases run out with its heartbeat.
        await lock?.release();
        return 'abandoned';
      }
      // Queued alerts get a last try, bounded: a Provider that is down must not hold the exit.
      await this.#alerts.close(Math.min(graceMs, 5000));
      for (const u of this.#unsubscribe.splice(0)) u();
      await this.#kube?.close();
      await coordinator.close();
      await store.close();
      await lock?.release();
      return 'finished';
    })();
    return this.#stopping;
  }
}
