/**
 * One full pass (SPEC §5 `pawl run`): scan what is due (reconcile through), select and guard
 * each policy, then run each automation. Every decision goes to the store.
 *
 * Store traffic is batched (docs/store.md): one read of the last scans, one transaction per
 * scan, three reads for every policy's state, scans and tags, one write of every policy's
 * outcome, and one write of every decision and event with the run's end.
 */
import {
  refKey,
  type Config,
  type ImageRepository,
  type ImageUpdateAutomation,
  selectPolicies,
} from '../config/index.js';
import {
  isScanDue,
  scanRepositories,
  type ScanReport,
  type ScanClients,
  type ScanStore,
} from '../scan/index.js';
import type { Decision, StoredEvent } from '../records/index.js';
import type { LatestScans, Store } from '../store/index.js';
import { errorMessage, lookupOf, pool, SortedTable, sortedUnique, type Logger } from '../util/index.js';
import {
  evaluatePolicy,
  FactsBook,
  NO_SCANS,
  policyReport,
  policyWrites,
  readLatestScans,
  type PolicyOutcome,
  type PolicyOutcomes,
  type PolicyStore,
} from './policies.js';
import { runAutomation, type AutomationOptions } from './automation.js';
import type { OutcomeCache } from './outcome-cache.js';
import { unscannedRow } from './shared-rows.js';
import type { PullRequestDeps } from './pull-request.js';
import { SecretPrints, secretChanged } from './secret-prints.js';
import type { MarkerDecision, RepositoryReport, RunReport } from './report.js';
import type { TreePlan } from './plan.js';
import { decisionEvent, toStoreEvent } from '../guard/index.js';

/** The store as a pass uses it: its scans and policies, the run's record, and its batches. */
export type PassStore = ScanStore &
  PolicyStore &
  Pick<Store, 'beginRun' | 'latestScans' | 'write' | 'flush' | 'openBatches'>;

export interface PassDeps {
  config: Config;
  store: PassStore;
  stateDir: string;
  clients: ScanClients;
  log: Logger;
  now?: () => Date;
  /** Who scans what the pass needs first: `pawl run` itself (directScans), the daemon its jobs. */
  scans: ScanPort;
  /** The forge's API for pull requests (fetch, sleep); default global fetch and timers. */
  forge?: PullRequestDeps;
  /**
   * The daemon's outcomes of earlier passes (outcome-cache.ts): a policy whose spec, repository
   * and scans are unchanged since it settled is not evaluated again. Absent (`pawl run`): every
   * policy is evaluated.
   */
  outcomes?: OutcomeCache;
  /**
   * The Secrets' prints of the state directory, as a daemon holds them for all its passes;
   * absent (`pawl run`): read from the state directory.
   */
  prints?: SecretPrints;
}

/** A repository the pass needs scanned before it selects; `since`: a webhook named it then (ms). */
export interface ScanWanted {
  repository: ImageRepository;
  since: number | null;
}

/**
 * Reconcile through: how a pass gets the scans it decided it needs. The pass decides which
 * (runPass, the one place); the port only runs them. It returns the reports of the scans it ran
 * for this pass; a repository it returns none for was scanned elsewhere (the daemon's repository
 * job, another replica), and the pass reads what that scan stored.
 */
export interface ScanPort {
  ensureScanned(wanted: readonly ScanWanted[], signal?: AbortSignal): Promise<ScanReport[]>;
}

/** `pawl run`: the pass scans the repositories itself, eight at once. */
export function directScans(
  deps: Pick<PassDeps, 'clients' | 'store' | 'log'> & {
    now?: () => Date;
    /** Each finished scan, for a progress line (`pawl run` on a terminal). */
    onScanned?: (report: ScanReport, done: number, total: number) => void;
  },
): ScanPort {
  const { clients, store, log } = deps;
  const now = deps.now ?? (() => new Date());
  return {
    ensureScanned: (wanted) =>
      scanRepositories(
        wanted.map((w) => w.repository),
        { client: (r) => clients.client(r), reference: (r) => clients.reference(r), store, log, now },
        { concurrency: 8, ...(deps.onScanned ? { onDone: deps.onScanned } : {}) },
      ),
  };
}

export interface PassOptions {
  dryRun?: boolean;
  /** Scan every repository, due or not. */
  refresh?: boolean;
  /** Only these automations (`ns/name`); default all that are not suspended. */
  automations?: ImageUpdateAutomation[];
  onProgress?: (what: string) => void;
  /** Aborted: nothing more is pushed (a daemon replica that lost its lease on the automation). */
  signal?: AbortSignal;
  /**
   * Repositories (`ns/name`) webhooks named: scanned before this pass even when not due, by a
   * scan that began at `since` (ms) or later. One moment for all (a daemon's pass takes its
   * webhooks together): a reconciled automation names every repository it uses, 10,000 of them.
   */
  rescan?: { repositories: ReadonlySet<string>; since: number };
  /** Scans (ids) a dead process left running: their repositories are due now. */
  interrupted?: ReadonlySet<number>;
  /** Told the pass's run id once the store has begun it (its result is the report). */
  onRun?: (runId: number) => void;
}

/** Sorted by `namespace/name`, each name once (its first object), with the names. */
function byName<T extends { metadata: { namespace: string; name: string } }>(
  objects: readonly T[],
): { keys: string[]; objects: T[] } {
  const { keys, at } = sortedUnique(objects.map((o) => refKey(o.metadata)));
  return { keys, objects: at.map((i) => objects[i]!) };
}

export async function runPass(deps: PassDeps, opts: PassOptions = {}): Promise<RunReport> {
  const now = deps.now ?? (() => new Date());
  const { config, store, log } = deps;
  const automations = byName(
    opts.automations ?? [...config.automations.values()].filter((a) => !a.spec.suspend),
  ).objects;

  // What the automations need, and everything when no automation is given. Sorted lists, not a
  // map and a set of names: at 10,000 images each of those was a table in V8's large-object
  // space a pass (issue 27).
  const { keys: policyKeys, objects: policies } = byName(
    opts.automations
      ? automations.flatMap((a) => selectPolicies(config, a))
      : [...config.imagePolicies.values()],
  );
  const used: ImageRepository[] = [];
  if (opts.automations)
    for (const p of policies) {
      const r = config.imageRepositories.get(refKey(p.spec.imageRepositoryRef));
      if (r) used.push(r);
    }
  const repos = byName(opts.automations ? used : [...config.imageRepositories.values()]).objects;

  const runId = await store.beginRun(now(), opts.dryRun ? 'dry-run' : 'run');
  opts.onRun?.(runId);
  const cache = deps.outcomes;
  const rows = cache?.rows;
  const share = cache
    ? (names: readonly string[], pairs: LatestScans[]) => cache.shareScans(names, pairs)
    : undefined;
  rows?.prune(config);
  const book = new FactsBook({
    config,
    store,
    clients: deps.clients,
    log,
    now,
    ...(share ? { shareScans: share } : {}),
  });

  // Scan and select first; meanwhile each automation clones or fetches its workspace (under the
  // workspace lock) and only then waits for the candidates, so Git and the registry overlap.
  const selection = (async () => {
    // Each repository's latest scans, by the repositories' sorted names (no hash table of
    // 10,000 a pass, issue 27). Replaced below by those of the scans this pass waits for.
    const repoKeys = repos.map((r) => refKey(r.metadata));
    const latest = new SortedTable(repoKeys, await readLatestScans(store, repoKeys, share));
    // A Secret that changed since the last scan (a fixed password) is a reason to scan now.
    const secretPrints = deps.prints ?? new SecretPrints(deps.stateDir);
    const prints = await secretPrints.read();
    const changedSecret = (r: ImageRepository): boolean => secretChanged(prints, config, r);
    // The one rule of what a pass scans first: due (or its last scan interrupted), asked for
    // (--refresh), named by a webhook, or its Secret changed.
    const due = repos.filter((r) => {
      const name = refKey(r.metadata);
      if (r.spec.suspend) return false;
      if (opts.refresh || opts.rescan?.repositories.has(name) || changedSecret(r)) return true;
      const last = latest.get(name)!.finished;
      return isScanDue(r, last, now()) || opts.interrupted?.has(last?.id ?? -1) === true;
    });
    for (const r of due.filter(changedSecret))
      log.info({ repository: refKey(r.metadata) }, 'its Secret changed since the last scan: scanning now');
    opts.onProgress?.(`scanning ${due.length} of ${repos.length} repositories`);
    // What was latest of a repository due now is not asked again: this pass reports and
    // evaluates it from its scan now. Let go before waiting for those scans: newer scans replace
    // these records everywhere else meanwhile, and a daemon's passes waiting on 10,000 scans each
    // held 10,000 records no one else did (~6.5 MB a pass, issue 27). Replaced, not deleted: a
    // Map that deletes most of its entries makes itself a new table, ~0.2 MB at 10,000.
    for (const r of due) latest.set(refKey(r.metadata), NO_SCANS);
    const scanned = await deps.scans.ensureScanned(
      due.map((r) => ({
        repository: r,
        since: opts.rescan?.repositories.has(refKey(r.metadata)) ? opts.rescan.since : null,
      })),
      opts.signal,
    );
    if (!opts.dryRun)
      await secretPrints
        .record(due, config)
        .catch((err: unknown) =>
          log.warn(
            { err: errorMessage(err) },
            "cannot record the repositories' Secret prints in the state directory",
          ),
        );
    const scannedByName = lookupOf(
      scanned.map((r) => r.name),
      scanned,
    );
    // Scanned elsewhere (the daemon's repository jobs): what that scan stored is the latest now.
    // With kept outcomes the scans this pass ran are read too: they are what the outcomes are
    // kept against.
    const elsewhere = due
      .map((r) => refKey(r.metadata))
      .filter((n) => deps.outcomes !== undefined || !scannedByName.has(n));
    if (elsewhere.length > 0) {
      const after = await readLatestScans(store, elsewhere, share);
      for (let i = 0; i < elsewhere.length; i++) latest.set(elsewhere[i]!, after[i]!);
    }
    const latestOf = (name: string) => latest.get(name) ?? NO_SCANS;
    const repositories: RepositoryReport[] = repos.map((r) => {
      const name = refKey(r.metadata);
      const s = scannedByName.get(name);
      if (s) return { name, tags: s.tags, scanned: s.scanned, anomalies: s.anomalies, error: s.error };
      // Not scanned by this pass: what was known before it is still the latest.
      const { finished: last, good } = latestOf(name);
      const failed = last?.outcome === 'failed';
      const tags = good?.tagCount ?? 0;
      const error = failed ? last.error : null;
      const errorAt = failed ? (last.endedAt ?? last.startedAt).toISOString() : undefined;
      return rows ? rows.unscanned(name, tags, error, errorAt) : unscannedRow(name, tags, error, errorAt);
    });

    // A daemon's passes evaluate one at a time (OutcomeCache.oneAtATime): each then finds what
    // the one before it kept, rather than several passes over the same policies evaluating
    // them all at once, each holding its own outcomes (issue 27).
    const evaluate = async (): Promise<SortedTable<PolicyOutcome>> => {
      // A daemon's outcomes kept from earlier passes stand for policies whose inputs are
      // unchanged; the rest are read and evaluated. In the policies' order, by position.
      const outcomes = new Array<PolicyOutcome>(policies.length);
      const todo: number[] = [];
      for (let i = 0; i < policies.length; i++) {
        const p = policies[i]!;
        const repoKey = refKey(p.spec.imageRepositoryRef);
        const repo = config.imageRepositories.get(repoKey);
        const kept = repo ? deps.outcomes?.lookup(p, repo, latestOf(repoKey)) : undefined;
        if (!kept) {
          todo.push(i);
          continue;
        }
        if (kept.error) log.info({ policy: kept.name, error: kept.error }, 'policy has no candidate');
        outcomes[i] = kept;
      }
      if (deps.outcomes) deps.outcomes.counts.reused += policies.length - todo.length;
      if (todo.length > 0) await book.prefetch(todo.map((i) => policies[i]!));
      // Policies wait on the registry (HEADs of new selections): evaluate several at once.
      const fresh: PolicyOutcome[] = [];
      await pool(todo, 8, async (i) => {
        const o = await evaluatePolicy(
          policies[i]!,
          { config, store, clients: deps.clients, log, now },
          book,
        );
        outcomes[i] = o;
        fresh.push(o);
      });
      await store.write(policyWrites(outcomes, book));
      book.evaluated();
      // Kept only once the store holds the states they leave.
      deps.outcomes?.keep(fresh, config);
      return new SortedTable(policyKeys, outcomes);
    };
    const outcomes = cache ? await cache.oneAtATime(evaluate) : await evaluate();
    return { repositories, outcomes };
  })();
  // Awaited below; the automations see a failure through their own await.
  selection.catch(() => undefined);

  // The open commit batches of the automations that batch (spec.git.commit.batch), read once.
  const batching = automations
    .filter((a) => a.spec.git.commit.batch !== undefined)
    .map((a) => refKey(a.metadata));
  const openBatches =
    batching.length > 0 ? store.openBatches(batching) : Promise.resolve(new Map<string, Date>());
  openBatches.catch(() => undefined);
  const batches: { automation: string; openedAt: Date | null }[] = [];

  const automationReports: RunReport['automations'] = new Array(automations.length);
  // Every decision and event of the pass, written with the run's end in one transaction.
  const kept = { decisions: [] as Decision[], events: [] as StoredEvent[] };
  const automationOpts: AutomationOptions = {
    ...(opts.dryRun ? { dryRun: true } : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
  };
  const runs = pool([...automations.keys()], 4, async (i) => {
    const a = automations[i]!;
    const outcomesOf = async (): Promise<PolicyOutcomes> => {
      const { outcomes } = await selection;
      opts.onProgress?.(`updating ${refKey(a.metadata)}`);
      const selected = selectPolicies(config, a);
      // An automation without a policySelector takes every policy of its namespace, often all
      // the pass has: then they are the pass's own table, not a copy of it.
      if (selected.length === outcomes.size && selected.every((p) => outcomes.has(refKey(p.metadata))))
        return { byName: outcomes, facts: book };
      const { keys } = byName(selected);
      const names: string[] = [];
      const mine: PolicyOutcome[] = [];
      for (const k of keys) {
        const o = outcomes.get(k);
        if (o) {
          names.push(k);
          mine.push(o);
        }
      }
      return { byName: new SortedTable(names, mine), facts: book };
    };
    const name = refKey(a.metadata);
    const batch =
      a.spec.git.commit.batch !== undefined ? { openedAt: (await openBatches).get(name) ?? null } : null;
    const {
      report: ar,
      plan,
      decisions,
      batch: batchAfter,
    } = await runAutomation(
      a,
      outcomesOf,
      { config, stateDir: deps.stateDir, log, now, ...(deps.forge ? { forge: deps.forge } : {}) },
      { ...automationOpts, ...(batch ? { batch } : {}) },
    );
    if (!opts.dryRun && batchAfter) batches.push({ automation: name, ...batchAfter });
    kept.decisions.push(...decisions.map((d: MarkerDecision): Decision => ({ automation: ar.name, ...d })));
    if (!opts.dryRun && plan) kept.events.push(...guardEvents(plan, now()));
    automationReports[i] = ar;
  });
  let report: RunReport;
  try {
    const { repositories, outcomes } = await selection;
    await runs;
    report = {
      repositories,
      policies: outcomes.values().map((o) => (rows ? rows.policy(o) : policyReport(o))),
      automations: automationReports,
    };
  } catch (err) {
    // The automations stop at the failed selection; none goes on working after the pass ends.
    await runs.catch(() => undefined);
    // What was decided before the failure is still kept; the run stays unfinished.
    await store
      .write({
        decisions: { runId, decisions: kept.decisions },
        events: kept.events,
        tagDigests: book.takeDigests(),
        batches,
      })
      .catch(() => undefined);
    throw err;
  }
  await store.write({
    decisions: { runId, decisions: kept.decisions },
    events: kept.events,
    tagDigests: book.takeDigests(),
    batches,
    finishRun: { runId, result: report, endedAt: now() },
  });
  // The pass is over: what it observed and decided is visible to other processes from here.
  await store.flush();
  return report;
}

function guardEvents(plan: TreePlan, at: Date): StoredEvent[] {
  const out: StoredEvent[] = [];
  for (const p of plan.plans) {
    const e = decisionEvent(
      p.decision,
      {
        policy: p.policy,
        file: p.marker.file,
        line: p.marker.line,
        current: p.marker.value,
        candidate: p.outcome.candidate?.tag ?? null,
      },
      p.pin?.pin ?? null,
    );
    if (e) out.push(toStoreEvent(e, at, refKey(p.outcome.policy.spec.imageRepositoryRef)));
  }
  return out;
}

/** Exit code of a pass: kept values are not failures; a failed scan or automation is. */
export function passExitCode(r: RunReport): number {
  return r.repositories.some((x) => x.error) || r.automations.some((a) => a.result === 'failed') ? 1 : 0;
}
