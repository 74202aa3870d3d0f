/**
 * `pawl serve` (SPEC §6, issue 11): the configuration, the store, the scheduler with one job per
 * ImageRepository and ImageUpdateAutomation, the webhook receivers and the admin endpoints,
 * reloads and a graceful stop. Everything that touches the process (signals, exit) is the CLI's.
 */
import { watch, type FSWatcher } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import {
  dependencyProblems,
  loadConfig,
  refKey,
  selectPolicies,
  type Config,
  type ImageRepository,
  type ImageUpdateAutomation,
  type LoadOptions,
  type SkippedObject,
} from '../config/index.js';
import { runPass, type RunReport } from '../run/index.js';
import { createScanClients, isScanDue, scanRepositories, type ScanClients } from '../scan/index.js';
import type { ScanRecord } from '../records/index.js';
import { DB_FILE, loadPostgres, openStoreFrom, type Store, type StoreSpec } from '../store/index.js';
import { ConfigError, errorMessage, formatProblem, type Logger, type Problem } from '../util/index.js';
import { ServeEvents, type PassEvent } from './events.js';
import { DaemonAlerts, type DaemonAlertsOptions } from './alerts.js';
import { countResponses, ServeMetrics } from './metrics.js';
import { Scheduler, systemClock, type Clock, type JobSpec, type RunContext } from './scheduler.js';
import {
  loadPostgresCoordinator,
  LocalCoordinator,
  type Coordinator,
  type Lease,
  type TakenWork,
} from './cluster/index.js';
import { buildRoutes } from './webhooks.js';
import { configUnready } from './readiness.js';
import { interruptedScans, workQueueOf } from './resume.js';
import { acquireServeLock, type ServeLock } from './lock.js';
import type { ReceiverRoutes } from './receivers/index.js';

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
}

export interface LoadedConfig {
  config: Config;
  clients: ScanClients;
  routes: ReceiverRoutes;
  /** `ns/name` of a repository → keys of the automations that depend on it. */
  dependents: Map<string, string[]>;
  /** automation `ns/name` → its repositories' `ns/name`. */
  repositoriesOf: Map<string, string[]>;
  loadedAt: Date;
  /** Everything the loader said, warnings and errors. */
  warnings: Problem[];
  /** The errors, with one more per object skipped because it needs an invalid one; empty when valid. */
  errors: Problem[];
  /** The objects left out (invalid, or needing one that is): readiness looks at them. */
  skipped: SkippedObject[];
}

export interface ReloadOutcome {
  applied: boolean;
  reason: string;
  at: Date;
  problems: Problem[];
  added: string[];
  removed: string[];
  changed: string[];
}

/** The loader's warnings, then its errors and the objects skipped for needing an invalid one. */
function allProblems(loaded: LoadedConfig): Problem[] {
  return [...loaded.warnings.filter((p) => p.severity === 'warning'), ...loaded.errors];
}

export const repositoryJob = (name: string): string => `ImageRepository/${name}`;
export const automationJob = (name: string): string => `ImageUpdateAutomation/${name}`;

/** Webhooks folded into an automation's next pass: which repositories to rescan, and since when. */
interface Pending {
  repositories: Set<string>;
  /** Pushed tags the webhooks named (`ns/name:tag`), awaited in the registry's tag lists. */
  tags: Set<string>;
  firstAt: number;
  count: number;
  /** Passes already re-run because the pushed tag was not readable yet. */
  retries: number;
}

/** Why a run did nothing: another replica is the preferred owner, or holds the lease now. */
export type SkipReason = 'not-owner' | 'held';

/** Waits for a repository scan another replica is running, before a pass goes on without it. */
const SCAN_WAIT_ATTEMPTS = 20;

/** Re-runs of a webhook's pass while the registry has not finished linking the tag it announced. */
const SETTLE_RETRIES = 6;
const SETTLE_FIRST_MS = 100;

class Slots {
  #free: number;
  readonly #queue: (() => void)[] = [];
  constructor(size: number) {
    this.#free = Math.max(1, size);
  }
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#free > 0) this.#free--;
    else await new Promise<void>((r) => this.#queue.push(r));
    try {
      return await fn();
    } finally {
      const next = this.#queue.shift();
      if (next) next();
      else this.#free++;
    }
  }
}

export class Daemon {
  readonly events: ServeEvents;
  readonly alerts: DaemonAlerts;
  readonly metrics: ServeMetrics;
  readonly scheduler: Scheduler;
  readonly store: Store;
  readonly coordinator: Coordinator;
  readonly log: Logger;
  readonly dryRun: boolean;
  current: LoadedConfig;
  lastReload: ReloadOutcome;
  /** Last pass of each automation, for the API. */
  readonly lastPass = new Map<string, PassEvent>();
  readonly startedAt: Date;
  #stopping: Promise<'finished' | 'abandoned'> | null = null;
  #reloading: Promise<ReloadOutcome> = Promise.resolve(null as unknown as ReloadOutcome);
  readonly #pending = new Map<string, Pending>();
  /** Scans of a repository no automation uses, re-run because a webhook's tag was not listed yet. */
  readonly #rescans = new Map<string, number>();
  readonly #scanSlots: Slots;
  readonly #passSlots: Slots;
  readonly #clock: Clock;
  readonly #watchers: FSWatcher[] = [];
  #watchTimer: NodeJS.Timeout | null = null;
  readonly #settleTimers = new Set<unknown>();
  /** Why each job's last run did nothing (cleared when it runs): for the API and reconcile through. */
  readonly skipped = new Map<string, SkipReason>();
  readonly #unsubscribe: (() => void)[] = [];
  #lock: ServeLock | null = null;
  #lastScans = new Map<string, ScanRecord | null>();
  /** Scans a dead process left running (marked interrupted at start): their repositories are due now. */
  #interrupted = new Set<number>();

  private constructor(
    readonly opts: ServeOptions,
    store: Store,
    loaded: LoadedConfig,
    coordinator: Coordinator,
  ) {
    this.log = opts.log;
    this.store = store;
    this.coordinator = coordinator;
    this.dryRun = opts.dryRun === true;
    this.#clock = opts.clock ?? systemClock;
    this.metrics = opts.metrics ?? new ServeMetrics({ defaultMetrics: false });
    this.metrics.watchCoordinator(this.coordinator);
    this.events = new ServeEvents(opts.log);
    this.alerts = new DaemonAlerts({
      config: loaded.config,
      events: this.events,
      store,
      metrics: this.metrics,
      log: opts.log,
      ...(opts.notifier ? { notifier: opts.notifier } : {}),
    });
    this.#scanSlots = new Slots(opts.scanConcurrency ?? 16);
    this.#passSlots = new Slots(opts.passConcurrency ?? 4);
    this.current = loaded;
    this.startedAt = new Date(this.#clock.now());
    this.lastReload = {
      applied: true,
      reason: 'start',
      at: loaded.loadedAt,
      problems: allProblems(loaded),
      added: [],
      removed: [],
      changed: [],
    };
    this.scheduler = new Scheduler({
      clock: this.#clock,
      ...(opts.random ? { random: opts.random } : {}),
      ...(opts.startSpreadMs !== undefined ? { startSpread: opts.startSpreadMs } : {}),
      onSettled: (r) => {
        this.metrics.passFailures.set({ job: r.key }, this.scheduler.status(r.key)?.failures ?? 0);
        if (r.error)
          this.log.warn(
            { job: r.key, error: r.error, trigger: r.trigger },
            'run failed; retrying with backoff',
          );
      },
    });
  }

  /**
   * Loads the configuration, opens the store and starts every job. An invalid object is skipped
   * with what needs it and the rest runs (one bad object must not stop a fleet's automation);
   * with `strict`, or when nothing could be read at all, throws ConfigError (exit 2).
   */
  static async start(opts: ServeOptions): Promise<Daemon> {
    opts = { ...opts, metrics: opts.metrics ?? new ServeMetrics() };
    const loaded = await Daemon.#load(opts);
    if ('problems' in loaded) throw new ConfigError(loaded.problems);
    const problems = allProblems(loaded);
    if (opts.strict && loaded.errors.length > 0) throw new ConfigError(problems);
    const spec = opts.storeSpec ?? { kind: 'state-dir', stateDir: opts.stateDir };
    // Replicas share a PostgreSQL database through their coordinator; a SQLite file is for one daemon.
    const lock =
      spec.kind === 'postgres'
        ? null
        : await acquireServeLock(spec.kind === 'sqlite' ? spec.file : join(spec.stateDir, DB_FILE), opts.log);
    let store: Store | null = null;
    let coordinator: Coordinator | null = null;
    try {
      store = await (opts.openStore?.() ?? openStoreFrom({ kind: 'state-dir', stateDir: opts.stateDir }));
      coordinator = opts.coordinator ?? (await Daemon.#coordinatorFor(opts, spec, store));
      await coordinator.start();
    } catch (err) {
      await coordinator?.close().catch(() => undefined);
      await store?.close().catch(() => undefined);
      await lock?.release();
      throw err;
    }
    const daemon = new Daemon(opts, store, loaded, coordinator);
    daemon.#lock = lock;
    if (lock) daemon.#interrupted = await interruptedScans(store, opts.log);
    daemon.metrics.configErrors.set(loaded.errors.length);
    for (const p of problems) {
      if (p.severity === 'error') opts.log.error(formatProblem(p));
      else opts.log.warn(formatProblem(p));
    }
    if (loaded.errors.length > 0)
      opts.log.error(
        { problems: loaded.errors.length },
        'invalid objects skipped: serving the valid ones; fix them and the next reload applies (pawl validate names the same)',
      );
    daemon.#subscribe();
    await daemon.#readLastScans();
    daemon.#applyJobs();
    // Webhook work a previous process accepted (202) and did not finish runs now.
    coordinator.resume?.();
    if (opts.watch !== false) await daemon.#watchConfig();
    opts.log.info(
      {
        repositories: loaded.config.imageRepositories.size,
        policies: loaded.config.imagePolicies.size,
        automations: loaded.config.automations.size,
        receivers: loaded.config.receivers.size,
        dryRun: daemon.dryRun,
      },
      'serving',
    );
    return daemon;
  }

  /**
   * One process on SQLite does everything; replicas on PostgreSQL coordinate in that database.
   * `pg` is loaded only then, as the store loads it.
   */
  static async #coordinatorFor(
    opts: ServeOptions,
    spec: StoreSpec | { kind: 'state-dir' },
    store: Store,
  ): Promise<Coordinator> {
    if (spec.kind !== 'postgres') return new LocalCoordinator(undefined, workQueueOf(store));
    const password = opts.storePassword ?? spec.password;
    const schema = 'schema' in store && typeof store.schema === 'string' ? store.schema : undefined;
    const [{ postgresClientConfig }, { connectPostgresCoordinator }] = await Promise.all([
      loadPostgres(),
      loadPostgresCoordinator(),
    ]);
    // The store's URL, password and schema, on connections of its own: a busy store pool must
    // never delay a heartbeat.
    const base = postgresClientConfig({
      url: spec.url,
      ...(password !== undefined ? { password } : {}),
      ...(schema !== undefined ? { schema } : {}),
    });
    return connectPostgresCoordinator(base, {
      log: opts.log,
      ...(opts.clock ? { clock: opts.clock } : {}),
      ...opts.cluster,
    });
  }

  /** Taking work: not stopping, the database (with several replicas) answers, and some automation runs. */
  get ready(): boolean {
    return this.#stopping === null && this.coordinator.healthy && this.unready === null;
  }

  /** Why the configuration keeps this daemon not ready (every automation skipped); null when it does not. */
  get unready(): string | null {
    return configUnready(this.current);
  }

  /**
   * The coordinator's wake-ups become scheduler requests: work queued for a job (here or by
   * another replica), a dead replica's interrupted runs, and — once the database returns — the
   * jobs that failed for want of it.
   */
  #subscribe(): void {
    const c = this.coordinator;
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
      c.onRecovered(() => {
        if (this.#stopping) return;
        for (const s of this.scheduler.statuses())
          if (s.failures > 0 && !s.suspended && c.owns(s.key)) void this.scheduler.request(s.key);
      }),
    );
  }

  /**
   * Runs `fn` holding the job's lease. A run by the clock or a retry is this replica's only when
   * it is the job's preferred owner; a request (a webhook, reconcile through, a takeover) claims
   * whatever the owner. Nothing runs without the lease, and the lease's signal stops the run
   * when it is lost.
   */
  async #claimed(
    key: string,
    ctx: RunContext,
    fn: (signal: AbortSignal, lease: Lease) => Promise<void>,
  ): Promise<void> {
    if (ctx.trigger !== 'request' && !this.coordinator.owns(key)) {
      this.skipped.set(key, 'not-owner');
      return;
    }
    let lease: Lease | null;
    try {
      lease = await this.coordinator.claim(key);
    } catch (err) {
      this.metrics.claims.inc({ outcome: 'error' });
      throw new Error(
        `cannot claim ${key}: the database is unreachable (${errorMessage(err)}); nothing runs until it returns`,
      );
    }
    if (!lease) {
      this.metrics.claims.inc({ outcome: 'held' });
      this.skipped.set(key, 'held');
      this.log.debug({ job: key }, 'another replica holds this job');
      return;
    }
    this.metrics.claims.inc({ outcome: 'granted' });
    this.skipped.delete(key);
    try {
      await fn(AbortSignal.any([ctx.signal, lease.signal]), lease);
    } finally {
      if (lease.signal.aborted) this.metrics.leasesLost.inc();
      await this.coordinator.release(lease);
    }
  }

  /** A run on schedule is the preferred owner's; the others skip it without waiting for a slot. */
  #admit(key: string): boolean {
    if (this.coordinator.owns(key)) return true;
    this.skipped.set(key, 'not-owner');
    return false;
  }

  /** Marks the run's queued work done; when more arrived meanwhile, one more run takes it. */
  async #ack(key: string, lease: Lease, work: TakenWork | null): Promise<void> {
    if (!work) return;
    const done = await this.coordinator.ack(lease, work).catch(() => false);
    if (!done && !lease.signal.aborted) void this.scheduler.request(key);
  }

  get stopping(): boolean {
    return this.#stopping !== null;
  }

  static async #load(opts: ServeOptions): Promise<LoadedConfig | { problems: Problem[] }> {
    let result;
    try {
      result = await loadConfig(opts.configPaths, opts.loadOptions);
    } catch (err) {
      // A path that vanished, or none given: a problem like any other, so a reload can refuse it.
      return {
        problems: [
          { location: { file: opts.configPaths.join(', ') }, severity: 'error', message: errorMessage(err) },
        ],
      };
    }
    const { config, problems, skipped } = result;
    const errors = problems.some((p) => p.severity === 'error')
      ? [...problems.filter((p) => p.severity === 'error'), ...dependencyProblems(skipped)]
      : [];
    const dependents = new Map<string, string[]>();
    const repositoriesOf = new Map<string, string[]>();
    for (const a of config.automations.values()) {
      const name = refKey(a.metadata);
      const repos = [
        ...new Set(selectPolicies(config, a).map((p) => refKey(p.spec.imageRepositoryRef))),
      ].sort();
      repositoriesOf.set(name, repos);
      for (const r of repos) dependents.set(r, [...(dependents.get(r) ?? []), name]);
    }
    return {
      config,
      clients: createScanClients(config, {
        log: opts.log,
        ...(opts.metrics ? { extra: { onResponse: countResponses(opts.metrics) } } : {}),
      }),
      routes: buildRoutes(config, opts.log),
      dependents,
      repositoriesOf,
      loadedAt: new Date(),
      warnings: problems,
      errors,
      skipped,
    };
  }

  /**
   * Reads the configuration again. A valid one replaces the running one (added objects start,
   * removed ones stop, changed ones get a new schedule); an invalid one is refused with the same
   * file:line problems as `pawl validate`, and the running one stays.
   */
  reload(reason: string): Promise<ReloadOutcome> {
    const next = this.#reloading.then(() => this.#reloadNow(reason));
    this.#reloading = next.catch(() => null as unknown as ReloadOutcome);
    return next;
  }

  async #reloadNow(reason: string): Promise<ReloadOutcome> {
    const at = new Date(this.#clock.now());
    if (this.#stopping) {
      return { applied: false, reason, at, problems: [], added: [], removed: [], changed: [] };
    }
    const read = await Daemon.#load({ ...this.opts, metrics: this.metrics });
    // All or nothing, unlike the start: a daemon keeps the configuration it runs rather than
    // swapping in one that lost objects; the refusal says what `pawl validate` says.
    const loaded = 'problems' in read || read.errors.length === 0 ? read : { problems: allProblems(read) };
    if ('problems' in loaded) {
      for (const p of loaded.problems.filter((x) => x.severity === 'error'))
        this.log.error({ reload: reason }, formatProblem(p));
      this.log.error({ reload: reason }, 'configuration refused; the running configuration stays');
      this.metrics.reloads.inc({ outcome: 'refused' });
      this.lastReload = {
        applied: false,
        reason,
        at,
        problems: loaded.problems,
        added: [],
        removed: [],
        changed: [],
      };
      return this.lastReload;
    }
    for (const w of loaded.warnings) this.log.warn({ reload: reason }, formatProblem(w));
    this.current = loaded;
    this.alerts.reconfigure(loaded.config);
    await this.#readLastScans();
    const { added, removed, changed } = this.#applyJobs();
    for (const key of removed) {
      const [kind, ...rest] = key.split('/');
      const name = rest.join('/');
      this.metrics.forget('job', key);
      if (kind === 'ImageRepository') this.metrics.forget('repository', name);
      else {
        this.metrics.forget('automation', name);
        this.lastPass.delete(name);
        this.#pending.delete(name);
      }
    }
    this.metrics.reloads.inc({ outcome: 'applied' });
    this.metrics.configErrors.set(0);
    this.log.info({ reload: reason, added, removed, changed }, 'configuration applied');
    this.lastReload = { applied: true, reason, at, problems: loaded.warnings, added, removed, changed };
    return this.lastReload;
  }

  /**
   * The last finished scan of every repository, read in one batch before jobs are (re)applied:
   * the scheduler's `firstDelay` is synchronous. A store that cannot answer makes them due now.
   */
  async #readLastScans(): Promise<void> {
    const names = [...this.current.config.imageRepositories.keys()];
    try {
      const latest = await this.store.latestScans(names);
      this.#lastScans = new Map(names.map((n) => [n, latest.get(n)?.finished ?? null]));
    } catch (err) {
      this.log.warn({ err: errorMessage(err) }, 'cannot read the last scans; every repository is due now');
      this.#lastScans = new Map();
    }
  }

  #applyJobs(): { added: string[]; removed: string[]; changed: string[] } {
    const { config, repositoriesOf } = this.current;
    const specs: JobSpec[] = [];
    for (const r of config.imageRepositories.values()) specs.push(this.#repositorySpec(r));
    for (const a of config.automations.values()) specs.push(this.#automationSpec(a, config, repositoriesOf));
    return this.scheduler.set(specs);
  }

  #repositorySpec(repo: ImageRepository): JobSpec {
    const name = refKey(repo.metadata);
    return {
      key: repositoryJob(name),
      interval: repo.spec.interval,
      // The scanner enforces spec.timeout itself; the scheduler's bound also covers waiting for a slot.
      timeout: repo.spec.timeout * 2 + 5_000,
      suspended: repo.spec.suspend,
      fingerprint: JSON.stringify([
        repo.spec,
        this.#secretsFingerprint(repo.metadata.namespace, [repo.spec.secretRef, repo.spec.certSecretRef]),
      ]),
      // A repository scanned recently (before a restart) is due when its interval is up, not now.
      firstDelay: () => {
        const current = this.current.config.imageRepositories.get(name) ?? repo;
        const last = this.#lastScans.get(name);
        if (!last || last.image !== current.spec.image || this.#interrupted.has(last.id)) return 0;
        return last.startedAt.getTime() + current.spec.interval - this.#clock.now();
      },
      admit: () => this.#admit(repositoryJob(name)),
      run: (ctx) =>
        this.#claimed(repositoryJob(name), ctx, (signal, lease) => this.#scan(name, ctx, signal, lease)),
    };
  }

  #secretsFingerprint(namespace: string, names: (string | undefined)[]): string[] {
    return names.map((n) => {
      const s = n === undefined ? undefined : this.current.config.secrets.get(`${namespace}/${n}`);
      return s ? JSON.stringify(Object.entries(s.data).map(([k, v]) => [k, v.toString('base64')])) : '';
    });
  }

  #automationSpec(a: ImageUpdateAutomation, config: Config, repositoriesOf: Map<string, string[]>): JobSpec {
    const name = refKey(a.metadata);
    const policies = selectPolicies(config, a).map((p) => [refKey(p.metadata), p.spec]);
    const git = config.gitRepositories.get(refKey(a.spec.sourceRef));
    return {
      key: automationJob(name),
      interval: a.spec.interval,
      timeout: this.opts.automationTimeoutMs ?? 10 * 60_000,
      suspended: a.spec.suspend,
      fingerprint: JSON.stringify([a.spec, policies, git?.spec ?? null, repositoriesOf.get(name) ?? []]),
      // Waiting for one of the pass slots does not count against the timeout.
      gate: (fn) => this.#passSlots.run(fn),
      admit: () => this.#admit(automationJob(name)),
      run: (ctx) => this.#pass(name, ctx),
    };
  }

  async #scan(name: string, ctx: RunContext, signal: AbortSignal, lease: Lease): Promise<void> {
    const { config, clients } = this.current;
    const repo = config.imageRepositories.get(name);
    if (!repo) return;
    // Webhooks for a repository no automation uses: this scan is what they asked for.
    const work = await this.coordinator.take(lease);
    const started = performance.now();
    const [report] = await this.#scanSlots.run(() =>
      scanRepositories(
        [repo],
        {
          client: (r) => clients.client(r),
          reference: (r) => clients.reference(r),
          store: this.store,
          log: this.log,
          now: () => new Date(this.#clock.now()),
          signal,
        },
        { concurrency: 1 },
      ),
    );
    if (!report) return;
    if (!report.error) {
      // The webhook's tag not listed yet: the work stays queued and this scan runs again shortly.
      const unlisted = work ? await this.#unlisted(work.tags) : [];
      if (unlisted.length === 0 || !this.#rescanSoon(name, unlisted)) {
        this.#rescans.delete(name);
        await this.#ack(repositoryJob(name), lease, work);
      }
    }
    this.metrics.observeScan(report);
    this.metrics.passDuration.observe(
      { kind: 'scan', outcome: report.error ? 'failed' : 'ok' },
      (performance.now() - started) / 1000,
    );
    this.events.emitScan({ trigger: ctx.trigger, at: new Date(this.#clock.now()), report });
    if (report.error) throw new Error(report.error);
  }

  /**
   * One automation's pass. Reconcile through: the repositories it depends on that are due, or
   * that a webhook named, are scanned first through their own jobs (so a scan already running is
   * joined, never doubled); then the pass, which finds nothing left to scan.
   */
  async #pass(name: string, ctx: RunContext): Promise<void> {
    // Runs inside its pass slot (the job's gate): webhooks that arrived while it waited are folded in.
    // Stopping: a pass still waiting for its slot does not start (its webhooks stay queued).
    if (this.#stopping) return;
    await this.#claimed(automationJob(name), ctx, (signal, lease) => this.#passNow(name, ctx, signal, lease));
  }

  async #passNow(name: string, ctx: RunContext, signal: AbortSignal, lease: Lease): Promise<void> {
    if (signal.aborted) throw signal.reason;
    if (this.#stopping) return;
    const { config, clients, repositoriesOf } = this.current;
    const automation = config.automations.get(name);
    if (!automation) return;
    const work = await this.coordinator.take(lease);
    const pending = mergePending(this.#pending.get(name), work);
    this.#pending.delete(name);
    const started = performance.now();
    const startedAt = new Date(this.#clock.now());
    const now = new Date(this.#clock.now());
    const mine = repositoriesOf.get(name) ?? [];
    const latest = await this.store.latestScans(mine);
    const toScan = mine.filter((r) => {
      if (pending?.repositories.has(r)) return true;
      const repo = config.imageRepositories.get(r);
      const last = latest.get(r)?.finished ?? null;
      return repo !== undefined && (isScanDue(repo, last, now) || this.#interrupted.has(last?.id ?? -1));
    });
    await Promise.all(
      toScan.map((r) => this.#scanBefore(r, pending?.repositories.has(r) ? pending.firstAt : null, signal)),
    );
    if (signal.aborted) throw signal.reason;
    const report = await runPass(
      {
        config,
        store: this.store,
        stateDir: this.opts.stateDir,
        clients,
        log: this.log,
        now: () => new Date(this.#clock.now()),
      },
      { automations: [automation], signal, ...(this.dryRun ? { dryRun: true } : {}) },
    );
    const endedAt = new Date(this.#clock.now());
    const ar = report.automations[0];
    this.metrics.observeReport(report);
    for (const e of await this.store.events({ kind: 'stale-scan', since: startedAt, limit: 1000 }))
      if (e.policy) this.metrics.staleEpisodes.inc({ policy: e.policy });
    const outcome = ar?.result ?? 'failed';
    this.metrics.passDuration.observe({ kind: 'automation', outcome }, (performance.now() - started) / 1000);
    if (ar?.result === 'pushed' && pending)
      this.metrics.webhookToPush.observe((this.#clock.now() - pending.firstAt) / 1000);
    const event: PassEvent = {
      automation: name,
      trigger: ctx.trigger,
      webhooks: pending?.count ?? 0,
      startedAt,
      endedAt,
      dryRun: this.dryRun,
      report,
    };
    this.lastPass.set(name, event);
    if (ar && ar.result !== 'failed') await this.#ack(automationJob(name), lease, work);
    if (pending && ar && ar.result !== 'failed') {
      const unlisted = await this.#unlisted(pending.tags);
      if (unlisted.length > 0 || unsettled(report)) this.#settleRetry(name, pending, unlisted);
    }
    this.log.info(
      {
        automation: name,
        result: outcome,
        trigger: ctx.trigger,
        webhooks: event.webhooks,
        changes: ar?.changes.length ?? 0,
        commit: ar?.commit ?? undefined,
        ms: Math.round(performance.now() - started),
      },
      'pass',
    );
    this.events.emitReport(event);
    if (ar?.result === 'failed') throw new Error(ar.error ?? 'the pass failed');
  }

  /** Schedules the scan again (as `#settleRetry` does a pass); false once the retries are spent. */
  #rescanSoon(name: string, unlisted: string[]): boolean {
    const retries = this.#rescans.get(name) ?? 0;
    if (retries >= SETTLE_RETRIES || this.#stopping) {
      this.log.info(
        { repository: name, unlisted },
        'the pushed tag is still not listed; the next interval scans again',
      );
      return false;
    }
    this.#rescans.set(name, retries + 1);
    this.#settleLater(retries, () => void this.scheduler.request(repositoryJob(name)));
    return true;
  }

  /** Runs `fn` after the `retry`-th settle delay (100 ms doubling); cancelled when stopping. */
  #settleLater(retry: number, fn: () => void): void {
    const timer = this.#clock.setTimeout(
      () => {
        this.#settleTimers.delete(timer);
        fn();
      },
      SETTLE_FIRST_MS * 2 ** retry,
    );
    this.#settleTimers.add(timer);
  }

  /** The awaited tags (`ns/name:tag`) that the last good scan of their repository does not list. */
  async #unlisted(tags: Iterable<string>): Promise<string[]> {
    const awaited = [...tags];
    if (awaited.length === 0) return [];
    const current = await this.store.currentTagsOf([...new Set(awaited.map(repositoryOfTag))]);
    const listed = new Set([...current].flatMap(([repo, list]) => list.map((tag) => `${repo}:${tag}`)));
    return awaited.filter((t) => !listed.has(t));
  }

  /**
   * Reconcile through, for one repository: scanned through its own job (so a scan already
   * running here is joined, never doubled). When another replica holds that job, this pass waits
   * for its scan to land in the shared store. `since`: a webhook named the repository, so only
   * a scan that started after the event will do; otherwise one that makes it no longer due.
   */
  async #scanBefore(name: string, since: number | null, signal: AbortSignal): Promise<void> {
    const key = repositoryJob(name);
    for (let attempt = 0; ; attempt++) {
      const current = since === null ? this.scheduler.running(key) : null;
      await (current ?? this.scheduler.request(key));
      if (this.skipped.get(key) !== 'held' || attempt >= SCAN_WAIT_ATTEMPTS || signal.aborted) return;
      const repo = this.current.config.imageRepositories.get(name);
      if (!repo) return;
      const last = (await this.store.latestScans([name])).get(name)?.finished ?? null;
      if (
        since !== null
          ? (last?.startedAt.getTime() ?? 0) >= since
          : !isScanDue(repo, last, new Date(this.#clock.now()))
      )
        return;
      await new Promise((r) =>
        this.#clock.setTimeout(() => r(undefined), Math.min(2000, 100 * 2 ** attempt)),
      );
    }
  }

  /**
   * The registry notifies as soon as the manifest is stored, before it links the tag: the scan
   * that follows may not list the pushed tag yet (Debian's docker-registry does this under
   * load), or the pass finds no candidate (`candidate-missing`, or a selection that does not
   * exist yet). Rather than leave the push to the next interval, the pass runs again shortly,
   * a few times, with the same webhooks (and their arrival time, for the latency metric).
   */
  #settleRetry(name: string, pending: Pending, unlisted: string[]): void {
    if (pending.retries >= SETTLE_RETRIES || this.#stopping) {
      this.log.info(
        { automation: name, ...(unlisted.length > 0 ? { unlisted } : {}) },
        'the pushed tag is still not readable; the next interval retries',
      );
      return;
    }
    this.log.debug(
      { automation: name, retry: pending.retries + 1, ...(unlisted.length > 0 ? { unlisted } : {}) },
      'the pushed tag is not readable yet; running the pass again shortly',
    );
    this.#settleLater(pending.retries, () => {
      const p = this.#pending.get(name) ?? {
        repositories: new Set<string>(),
        tags: new Set<string>(),
        firstAt: pending.firstAt,
        count: 0,
        retries: 0,
      };
      for (const r of pending.repositories) p.repositories.add(r);
      for (const t of pending.tags) p.tags.add(t);
      p.firstAt = Math.min(p.firstAt, pending.firstAt);
      p.retries = Math.max(p.retries, pending.retries + 1);
      this.#pending.set(name, p);
      void this.scheduler.request(automationJob(name));
    });
  }

  /**
   * An accepted webhook: the automations depending on the named repositories run at once (their
   * pass rescans those repositories first); a repository no automation uses is rescanned. Many
   * events for one automation fold into its running pass's single follow-up.
   */
  async trigger(
    repositories: readonly string[],
    named: readonly string[] = [],
    tags: readonly string[] = [],
  ): Promise<{ automations: string[]; repositories: string[] }> {
    const { config, dependents } = this.current;
    const runnable = (a: string) => config.automations.get(a)?.spec.suspend === false;
    const touched = new Map<string, Set<string>>();
    const alone: string[] = [];
    for (const r of repositories) {
      const deps = (dependents.get(r) ?? []).filter(runnable);
      if (deps.length === 0) alone.push(r);
      for (const a of deps) touched.set(a, (touched.get(a) ?? new Set<string>()).add(r));
    }
    // Automations the Receiver names run even when the event names no image (a forge push).
    for (const a of named) if (runnable(a) && !touched.has(a)) touched.set(a, new Set());
    const firstAt = this.#clock.now();
    const tagsOf = (repos: Iterable<string>) => {
      const want = new Set(repos);
      return tags.filter((t) => want.has(repositoryOfTag(t)));
    };
    // Queued where every replica sees it; the replica that runs the job is woken (maybe this one).
    await this.coordinator.publish([
      ...[...touched].map(([a, repos]) => ({
        key: automationJob(a),
        repositories: [...repos].sort(),
        tags: tagsOf(repos),
        firstAt,
        events: 1,
      })),
      ...alone.map((r) => ({
        key: repositoryJob(r),
        repositories: [r],
        tags: tagsOf([r]),
        firstAt,
        events: 1,
      })),
    ]);
    return { automations: [...touched.keys()], repositories: alone };
  }

  /**
   * Stops taking work and lets runs in progress finish within `graceMs`. 'abandoned' when some
   * did not: the caller exits anyway — workspaces and commits are crash-safe, and the next start
   * fetches, resets and redoes what was left.
   */
  shutdown(graceMs: number): Promise<'finished' | 'abandoned'> {
    if (this.#stopping) return this.#stopping;
    this.#stopping = (async () => {
      this.scheduler.stop();
      this.#unwatch();
      for (const t of this.#settleTimers) this.#clock.clearTimeout(t);
      this.#settleTimers.clear();
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
        await this.#lock?.release();
        return 'abandoned';
      }
      // Queued alerts get a last try, bounded: a Provider that is down must not hold the exit.
      await this.alerts.close(Math.min(graceMs, 5000));
      for (const u of this.#unsubscribe.splice(0)) u();
      await this.coordinator.close();
      await this.store.close();
      await this.#lock?.release();
      return 'finished';
    })();
    return this.#stopping;
  }

  async #watchConfig(): Promise<void> {
    const debounce = this.opts.watchDebounceMs ?? 300;
    const onChange = () => {
      if (this.#watchTimer) clearTimeout(this.#watchTimer);
      this.#watchTimer = setTimeout(() => {
        this.#watchTimer = null;
        void this.reload('file change');
      }, debounce);
    };
    for (const p of this.opts.configPaths) {
      const abs = resolve(p);
      try {
        const isDir = (await stat(abs)).isDirectory();
        // A file is watched through its directory: editors and ConfigMap updates replace it by rename.
        const w = isDir
          ? watch(abs, { recursive: true }, onChange)
          : watch(dirname(abs), (_e, f) => {
              if (f === null || f === basename(abs) || f === '..data') onChange();
            });
        w.on('error', (err) =>
          this.log.warn({ path: abs, err: errorMessage(err) }, 'cannot watch the configuration'),
        );
        w.unref();
        this.#watchers.push(w);
      } catch (err) {
        this.log.warn(
          { path: abs, err: errorMessage(err) },
          'cannot watch the configuration; reload with SIGHUP',
        );
      }
    }
  }

  #unwatch(): void {
    if (this.#watchTimer) clearTimeout(this.#watchTimer);
    for (const w of this.#watchers.splice(0)) w.close();
  }
}

/** `ns/name` of an awaited `ns/name:tag` (a tag holds no `:`). */
function repositoryOfTag(t: string): string {
  return t.slice(0, t.lastIndexOf(':'));
}

/** The webhooks a pass folds in: its own settle retries and what the queue held for it. */
function mergePending(local: Pending | undefined, work: TakenWork | null): Pending | undefined {
  if (!work) return local;
  const p: Pending = local ?? {
    repositories: new Set(),
    tags: new Set(),
    firstAt: work.firstAt,
    count: 0,
    retries: 0,
  };
  for (const r of work.repositories) p.repositories.add(r);
  for (const t of work.tags) p.tags.add(t);
  p.firstAt = Math.min(p.firstAt, work.firstAt);
  p.count += work.events;
  return p;
}

/** A pass that found no candidate, or a candidate the registry does not answer for yet. */
function unsettled(report: RunReport): boolean {
  return (
    report.policies.some((p) => p.error !== null) ||
    report.automations.some((a) => a.kept.some((k) => k.reason === 'candidate-missing'))
  );
}
