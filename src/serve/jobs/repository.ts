/**
 * The ImageRepository job: one scan under the repository's lease, with the webhook work queued
 * for it (a repository no automation uses), and the scans a pass asks for (reconcile through):
 * through this job, so a scan already running here is joined and never doubled, and always
 * under its lease.
 */
import { createHash } from 'node:crypto';
import { refKey, type ImageRepository } from '../../config/index.js';
import type { ScanPort, ScanWanted } from '../../run/index.js';
import { isScanDue, scanRepositories, type ScanReport } from '../../scan/index.js';
import type { ScanRecord } from '../../records/index.js';
import { errorMessage, type Slots } from '../../util/index.js';
import type { Gate, JobSpec, RunContext } from '../scheduler.js';
import type { Claimed } from './leases.js';
import { repositoryJob, type JobContext } from './types.js';
import { unlistedTags } from './work.js';

/** Waits for a repository scan another replica is running, before a pass goes on without it. */
const SCAN_WAIT_ATTEMPTS = 20;

export interface RepositoryJobContext extends JobContext {
  /** Scans running at once across all repositories. */
  slots: Slots;
  /** Scans a dead process left running (marked interrupted at start): their repositories are due now. */
  interrupted: ReadonlySet<number>;
}

/** A repository job's run: when its scan's listing began (null: not yet), and whether it is over. */
interface RunRecord {
  began: number | null;
  ended: boolean;
}

interface RepositoryJobHandlers {
  firstDelay(name: string, repo: ImageRepository): number;
  admit(key: string): boolean;
  /** The scan slots. */
  gate(): Gate;
  run(name: string, key: string, run: RunContext): Promise<void>;
}

/** One repository's job (RepositoryJobs.spec): its fields, and its owner's handlers. */
class RepositoryJobSpec implements JobSpec {
  constructor(
    readonly key: string,
    readonly interval: number,
    readonly timeout: number,
    readonly suspended: boolean,
    readonly fingerprint: string,
    private readonly name: string,
    private readonly repo: ImageRepository,
    private readonly handlers: RepositoryJobHandlers,
  ) {}

  firstDelay(): number {
    return this.handlers.firstDelay(this.name, this.repo);
  }

  admit(): boolean {
    return this.handlers.admit(this.key);
  }

  get gate(): Gate {
    return this.handlers.gate();
  }

  run(run: RunContext): Promise<void> {
    return this.handlers.run(this.name, this.key, run);
  }
}

export class RepositoryJobs implements ScanPort {
  #lastScans = new Map<string, ScanRecord | null>();
  /** When this replica's latest scan of each repository began (its registry listing), clock ms. */
  readonly #scanBegan = new Map<string, number>();
  /** The repository job's latest run here: when its scan's listing began (null: not yet), and whether it is over. */
  readonly #runs = new Map<string, RunRecord>();
  /** Scans re-run because a webhook's tag was not listed yet, by repository. */
  readonly #rescans = new Map<string, number>();

  constructor(private readonly ctx: RepositoryJobContext) {}

  /**
   * The last finished scan of every repository, read in one batch before jobs are (re)applied:
   * the scheduler's `firstDelay` is synchronous. A store that cannot answer makes them due now.
   */
  async readLastScans(): Promise<void> {
    const names = [...this.ctx.config().config.imageRepositories.keys()];
    try {
      const latest = await this.ctx.store.latestScans(names);
      this.#lastScans = new Map(names.map((n) => [n, latest.get(n)?.finished ?? null]));
    } catch (err) {
      this.ctx.log.warn(
        { err: errorMessage(err) },
        'cannot read the last scans; every repository is due now',
      );
      this.#lastScans = new Map();
    }
  }

  /**
   * What each repository's job does, made once: a job is a small record of its own fields and
   * these (each job's four closures and their context were ~0.3 KB a repository, kept for the
   * daemon's life: issue 27).
   */
  readonly #handlers: RepositoryJobHandlers = {
    // A repository scanned recently (before a restart) is due when its interval is up, not now.
    firstDelay: (name, repo) => {
      const { ctx } = this;
      const current = ctx.config().config.imageRepositories.get(name) ?? repo;
      const last = this.#lastScans.get(name);
      if (!last || last.image !== current.spec.image || ctx.interrupted.has(last.id)) return 0;
      return last.startedAt.getTime() + current.spec.interval - ctx.clock.now();
    },
    admit: (key) => this.ctx.leases.admit(key),
    // A run waits for its scan slot before it claims the lease or takes its work: every
    // repository asked for at once (a start, `pawl reconcile` of everything) is as many runs
    // waiting, and each held a lease, its signals, its queued work and a timer while it waited
    // (issue 27). Its record is made once it has a slot: a pass asking meanwhile joins the run
    // waiting (it has not begun), as the scheduler's `requestThen` does.
    gate: () => this.ctx.slots,
    run: (name, key, run) => {
      const record: RunRecord = { began: null, ended: false };
      this.#runs.set(name, record);
      return this.ctx.leases
        .run(key, run, (claimed) => this.#scan(name, run, claimed, record))
        .finally(() => {
          record.ended = true;
        });
    },
  };

  spec(repo: ImageRepository): JobSpec {
    const name = refKey(repo.metadata);
    return new RepositoryJobSpec(
      repositoryJob(name),
      repo.spec.interval,
      // The scanner enforces spec.timeout itself; the scheduler's is the outer bound of the run
      // (its lease, its queued work, the store), once it holds a scan slot.
      repo.spec.timeout * 2 + 5_000,
      repo.spec.suspend,
      // A digest, not the text: the text was ~0.3 KB a repository, kept by its job for the
      // daemon's life (issue 27).
      createHash('sha256')
        .update(
          JSON.stringify([
            repo.spec,
            this.#secretsFingerprint(repo.metadata.namespace, [repo.spec.secretRef, repo.spec.certSecretRef]),
          ]),
        )
        .digest('base64'),
      name,
      repo,
      this.#handlers,
    );
  }

  #secretsFingerprint(namespace: string, names: (string | undefined)[]): string[] {
    return names.map((n) => {
      const s = n === undefined ? undefined : this.ctx.config().config.secrets.get(`${namespace}/${n}`);
      return s ? JSON.stringify(Object.entries(s.data).map(([k, v]) => [k, v.toString('base64')])) : '';
    });
  }

  async #scan(
    name: string,
    run: RunContext,
    claimed: Claimed,
    record: { began: number | null },
  ): Promise<void> {
    const { ctx } = this;
    const { config, clients } = ctx.config();
    const repo = config.imageRepositories.get(name);
    if (!repo) return;
    // Webhooks for a repository no automation uses: this scan is what they asked for.
    const work = await claimed.take();
    const started = performance.now();
    record.began = ctx.clock.now();
    this.#scanBegan.set(name, record.began);
    const [report] = await scanRepositories(
      [repo],
      {
        client: (r) => clients.client(r),
        reference: (r) => clients.reference(r),
        store: ctx.store,
        log: ctx.log,
        now: () => new Date(ctx.clock.now()),
        signal: claimed.signal,
      },
      { concurrency: 1 },
    );
    if (!report) return;
    if (!report.error) {
      // The webhook's tag not listed yet: the work stays queued and this scan runs again shortly.
      const unlisted = work ? await unlistedTags(ctx.store, work.tags) : [];
      if (unlisted.length === 0 || !this.#rescanSoon(name, unlisted)) {
        this.#rescans.delete(name);
        await claimed.done(work);
      }
    }
    ctx.metrics.observeScan(report);
    ctx.metrics.passDuration.observe(
      { kind: 'scan', outcome: report.error ? 'failed' : 'ok' },
      (performance.now() - started) / 1000,
    );
    ctx.events.emitScan({ trigger: run.trigger, at: new Date(ctx.clock.now()), report });
    if (report.error) throw new Error(report.error);
  }

  /** Schedules the scan again by the settle rule; false once its retries are spent. */
  #rescanSoon(name: string, unlisted: string[]): boolean {
    const retries = this.#rescans.get(name) ?? 0;
    const again = this.ctx.settle.later(retries, () => void this.ctx.runs.request(repositoryJob(name)));
    if (!again) {
      this.ctx.log.info(
        { repository: name, unlisted },
        'the pushed tag is still not listed; the next interval scans again',
      );
      return false;
    }
    this.#rescans.set(name, retries + 1);
    return true;
  }

  /** A removed repository: nothing of it is kept. */
  forget(name: string): void {
    this.#rescans.delete(name);
    this.#scanBegan.delete(name);
    this.#runs.delete(name);
  }

  /**
   * The pass's scan port. The scans are this job's runs, and the scan events its own: the pass
   * reads what they stored, so none is returned.
   */
  async ensureScanned(wanted: readonly ScanWanted[], signal?: AbortSignal): Promise<ScanReport[]> {
    const names = wanted.map((w) => refKey(w.repository.metadata));
    // Every repository's run joined or asked for at once and counted down, without a suspended
    // function of each: a pass over 10,000 repositories held 10,000 of them (~1 KB each) while
    // the scans ran, and four passes at once 40,000 (issue 27).
    await new Promise<void>((resolve) => {
      let left = 1;
      const one = (): void => {
        if (--left === 0) resolve();
      };
      for (let i = 0; i < names.length; i++) {
        left++;
        this.#joinOrAsk(names[i]!, wanted[i]!.since, one);
      }
      one();
    });
    const held: Promise<void>[] = [];
    for (let i = 0; i < names.length; i++)
      if (this.ctx.leases.skipped(repositoryJob(names[i]!)) === 'held' && !signal?.aborted)
        held.push(this.#heldElsewhere(names[i]!, wanted[i]!.since, signal));
    await Promise.all(held);
    if (signal?.aborted) throw signal.reason;
    return [];
  }

  /**
   * Calls `done` once a run of the repository's job that will do has ended, asking for one when
   * there is none. With no `since`, the one in progress will do. With one (a webhook's moment),
   * a run still waiting for its slot (the scheduler joins it), or one whose scan began after
   * `since` or is still to begin, or else the latest scan when it began after `since` (`done` at
   * once). Ten automations reconciled together over the same repositories, or a pass a moment
   * after a webhook's, would otherwise scan each repository once per pass that asks (issue 27:
   * 73,266 scans of 10,000 repositories in one round of `pawl reconcile`).
   */
  #joinOrAsk(name: string, since: number | null, done: () => void): void {
    const key = repositoryJob(name);
    const runs = this.ctx.runs;
    if (since === null) return runs.joinThen(key, done);
    // Only a record of this very run will do: the last run's, ended while the scheduler has not
    // settled it yet, asks for one run more, as always before.
    const run = this.#runs.get(name);
    if (run && !run.ended && (run.began === null || run.began >= since)) return runs.joinThen(key, done);
    const began = this.#scanBegan.get(name);
    if (!runs.isRunning(key) && began !== undefined && began >= since) return done();
    runs.requestThen(key, done);
  }

  /**
   * A repository whose job another replica held when the pass asked for its scan: the pass waits
   * for that scan to land in the shared store, a while, then goes on with what is stored (it never
   * scans outside the lease). `since`: a webhook named the repository, so only a scan that started
   * after the event will do; otherwise one that makes it no longer due.
   */
  async #heldElsewhere(name: string, since: number | null, signal: AbortSignal | undefined): Promise<void> {
    const { ctx } = this;
    const key = repositoryJob(name);
    for (let attempt = 0; ; attempt++) {
      if (ctx.leases.skipped(key) !== 'held' || signal?.aborted) return;
      if (attempt >= SCAN_WAIT_ATTEMPTS) {
        ctx.log.debug(
          { job: key },
          'another replica holds this repository; the pass uses its last stored scan',
        );
        return;
      }
      const repo = ctx.config().config.imageRepositories.get(name);
      if (!repo) return;
      const last = (await ctx.store.latestScans([name])).get(name)?.finished ?? null;
      if (
        since !== null
          ? (last?.startedAt.getTime() ?? 0) >= since
          : !isScanDue(repo, last, new Date(ctx.clock.now()))
      )
        return;
      await new Promise((r) => ctx.clock.setTimeout(() => r(undefined), Math.min(2000, 100 * 2 ** attempt)));
      await new Promise<void>((r) => this.#joinOrAsk(name, since, r));
    }
  }
}
