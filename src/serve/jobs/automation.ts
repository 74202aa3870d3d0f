/**
 * The ImageUpdateAutomation job: one pass under the automation's lease, in one of the pass
 * slots, folding in the webhooks queued for it. Reconcile through is runPass's: it asks the
 * scan port (the repository jobs) for the repositories it needs first, under their leases.
 */
import { createHash } from 'node:crypto';
import { refKey, selectPolicies, type Config, type ImageUpdateAutomation } from '../../config/index.js';
import { OutcomeCache, runPass, SecretPrints, type RunReport, type ScanPort } from '../../run/index.js';
import type { Slots } from '../../util/index.js';
import { lastPassOf, type LastPass, type PassEvent } from '../events.js';
import type { JobSpec, RunContext } from '../scheduler.js';
import type { Claimed } from './leases.js';
import { automationJob, type JobContext } from './types.js';
import { BatchWakes } from './batch-wakes.js';
import { carryPending, mergePending, scanSince, unlistedTags, type Pending } from './work.js';

export interface AutomationJobContext extends JobContext {
  /** Passes running at once (each runs git). */
  slots: Slots;
  /** How the pass gets its scans: the repository jobs. */
  scans: ScanPort;
  stateDir: string;
  dryRun: boolean;
  /** Outer bound of one pass, ms. */
  timeoutMs: number;
  /** Scans a dead process left running: the pass scans their repositories first. */
  interrupted: ReadonlySet<number>;
}

export class AutomationJobs {
  readonly #pending = new Map<string, Pending>();
  /** Last pass of each automation, for the API and the dashboard. */
  readonly #lastPass = new Map<string, LastPass>();
  readonly #wakes: BatchWakes;
  /**
   * The policies' outcomes of earlier passes (run/outcome-cache.ts): a pass for one changed
   * image re-evaluates that image's policies, not every policy of the automation.
   */
  readonly outcomes = new OutcomeCache();
  /** The state directory's Secret prints, read once and written by one pass at a time. */
  #prints: SecretPrints | undefined;

  constructor(private readonly ctx: AutomationJobContext) {
    this.#wakes = new BatchWakes(ctx.clock, (name) => void ctx.runs.request(automationJob(name)));
  }

  get lastPass(): ReadonlyMap<string, LastPass> {
    return this.#lastPass;
  }

  spec(a: ImageUpdateAutomation, config: Config, repositoriesOf: Map<string, string[]>): JobSpec {
    const { ctx } = this;
    const name = refKey(a.metadata);
    const key = automationJob(name);
    const git = config.gitRepositories.get(refKey(a.spec.sourceRef));
    return {
      key,
      interval: a.spec.interval,
      timeout: ctx.timeoutMs,
      suspended: a.spec.suspend,
      fingerprint: automationFingerprint(a, config, git?.spec ?? null, repositoriesOf.get(name) ?? []),
      // Waiting for one of the pass slots does not count against the timeout.
      gate: ctx.slots,
      admit: () => ctx.leases.admit(key),
      // Runs inside its pass slot: webhooks that arrived while it waited are folded in.
      // Stopping: a pass still waiting for its slot does not start (its webhooks stay queued).
      run: async (run) => {
        if (ctx.stopping()) return;
        await ctx.leases.run(key, run, (claimed) => this.#pass(name, run, claimed));
      },
    };
  }

  /** A removed automation: nothing of it is kept. */
  forget(name: string): void {
    this.#lastPass.delete(name);
    this.#pending.delete(name);
    this.#wakes.at(name, undefined);
  }

  /** Stopping: no pass is asked for at a batch's end (the store keeps the batch; the next start writes it). */
  close(): void {
    this.#wakes.close();
  }

  async #pass(name: string, run: RunContext, claimed: Claimed): Promise<void> {
    const { ctx } = this;
    const { signal } = claimed;
    if (signal.aborted) throw signal.reason;
    if (ctx.stopping()) return;
    const { config, clients } = ctx.config();
    const automation = config.automations.get(name);
    if (!automation) return;
    const work = await claimed.take();
    // A scan that began after the newest webhook folded into this pass arrived lists what each of
    // them announced (the earliest arrival, kept for the latency metric, would let a scan between
    // two of them do). When that arrival is not known, after the moment the work was taken: every
    // webhook in it had arrived by then. Not always the taking: passes that wait for a pass slot
    // would each ask for a scan newer than the one before them (issue 27: ten automations
    // reconciled together scanned each repository four times, three of them needlessly).
    const takenAt = ctx.clock.now();
    const pending = mergePending(this.#pending.get(name), work);
    const since = scanSince(pending, takenAt);
    this.#pending.delete(name);
    const started = performance.now();
    const startedAt = new Date(ctx.clock.now());
    let runId = -1;
    const report = await runPass(
      {
        config,
        store: ctx.store,
        stateDir: ctx.stateDir,
        clients,
        log: ctx.log,
        now: () => new Date(ctx.clock.now()),
        scans: ctx.scans,
        outcomes: this.outcomes,
        prints: (this.#prints ??= new SecretPrints(ctx.stateDir)),
      },
      {
        automations: [automation],
        signal,
        interrupted: ctx.interrupted,
        onRun: (id) => (runId = id),
        ...(ctx.dryRun ? { dryRun: true } : {}),
        ...(pending ? { rescan: { repositories: pending.repositories, since } } : {}),
      },
    );
    const event: PassEvent = {
      automation: name,
      trigger: run.trigger,
      webhooks: pending?.count ?? 0,
      startedAt,
      endedAt: new Date(ctx.clock.now()),
      dryRun: ctx.dryRun,
      report,
    };
    const ar = report.automations[0];
    // A failed pass is retried by the scheduler; one that held its writes is woken at the batch's end.
    if (ar?.result !== 'failed' && !ctx.dryRun) this.#wakes.at(name, ar?.batch?.writesAt);
    await this.#observe(event, started, pending);
    this.#lastPass.set(name, lastPassOf(event, runId));
    if (ar && ar.result !== 'failed') await claimed.done(work);
    if (pending && ar && ar.result !== 'failed') {
      const unlisted = await unlistedTags(ctx.store, pending.tags);
      if (unlisted.length > 0 || unsettled(report)) this.#settleRetry(name, pending, unlisted);
    }
    ctx.log.info(
      {
        automation: name,
        result: ar?.result ?? 'failed',
        trigger: run.trigger,
        webhooks: event.webhooks,
        changes: ar?.changes.length ?? 0,
        commit: ar?.commit ?? undefined,
        ms: Math.round(performance.now() - started),
      },
      'pass',
    );
    ctx.events.emitReport(event);
    if (ar?.result === 'failed') throw new Error(ar.error ?? 'the pass failed');
  }

  /** The pass's metrics: its report, the stale episodes it opened, its duration and latency. */
  async #observe(event: PassEvent, started: number, pending: Pending | undefined): Promise<void> {
    const { metrics, store, clock } = this.ctx;
    const ar = event.report.automations[0];
    metrics.observeReport(event.report);
    for (const e of await store.events({ kind: 'stale-scan', since: event.startedAt, limit: 1000 }))
      if (e.policy) metrics.staleEpisodes.inc({ policy: e.policy });
    metrics.passDuration.observe(
      { kind: 'automation', outcome: ar?.result ?? 'failed' },
      (performance.now() - started) / 1000,
    );
    if (ar?.result === 'pushed' && pending)
      metrics.webhookToPush.observe((clock.now() - pending.firstAt) / 1000);
  }

  /** The pass again by the settle rule, with the same webhooks (and their arrival time). */
  #settleRetry(name: string, pending: Pending, unlisted: string[]): void {
    const { ctx } = this;
    const words = unlisted.length > 0 ? { unlisted } : {};
    const again = ctx.settle.later(pending.retries, () => {
      this.#pending.set(name, carryPending(this.#pending.get(name), pending));
      void ctx.runs.request(automationJob(name));
    });
    if (!again) {
      ctx.log.info(
        { automation: name, ...words },
        'the pushed tag is still not readable; the next interval retries',
      );
      return;
    }
    ctx.log.debug(
      { automation: name, retry: pending.retries + 1, ...words },
      'the pushed tag is not readable yet; running the pass again shortly',
    );
  }
}

/**
 * What restarts an automation's schedule when it changes: its spec, its policies' names and specs,
 * its GitRepository's spec and its repositories. A digest, not the text: the scheduler keeps one
 * per job for as long as the daemon runs, and a selector-less automation's text holds every
 * policy's spec (10 automations over 10,000 policies kept ~35 MB of it, issue 27). Hashed piece
 * by piece, so the whole text is never built either.
 */
export function automationFingerprint(
  a: ImageUpdateAutomation,
  config: Config,
  git: unknown,
  repositories: readonly string[],
): string {
  const h = createHash('sha256');
  // Each piece is JSON and ends with a newline JSON never holds unescaped: no two lists of
  // pieces hash alike by moving text across a boundary.
  const piece = (v: unknown) => h.update(`${JSON.stringify(v)}\n`);
  piece(a.spec);
  for (const p of selectPolicies(config, a)) piece([refKey(p.metadata), p.spec]);
  piece('policies end');
  piece(git);
  for (const r of repositories) piece(r);
  return h.digest('base64');
}

/** A pass that found no candidate, or a candidate the registry does not answer for yet. */
function unsettled(report: RunReport): boolean {
  return (
    report.policies.some((p) => p.error !== null) ||
    report.automations.some((a) => a.kept.some((k) => k.reason === 'candidate-missing'))
  );
}
