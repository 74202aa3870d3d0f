/**
 * `pawl reconcile` on the daemon's side (docs/api.md): an object's job is asked to run now, the
 * way a webhook asks — work queued where every replica sees it, run under the job's lease by the
 * scheduler — and the answer waits for that run's outcome. Nothing here scans, writes or pushes
 * itself: there is never a second writer.
 */
import { refKey } from '../config/index.js';
import type { Coordinator } from './cluster/index.js';
import type { PassEvent, ScanEvent, ServeEvents } from './events.js';
import { automationJob, repositoryJob, type SkipReason } from './jobs/index.js';
import type { Clock, RunResult, Scheduler } from './scheduler.js';
import type { LoadedConfig } from './source/index.js';

export type ReconcileKind = 'repository' | 'automation';

export type ReconcileAnswer =
  | { status: 200; body: ReconcileOutcome }
  | { status: 202 | 404 | 409 | 503; body: { error?: string; state?: string; message: string } };

export interface ReconcileOutcome {
  kind: ReconcileKind;
  name: string;
  /** `done`: this replica ran it; `elsewhere`: another replica held the job and ran it. */
  state: 'done' | 'elsewhere';
  error: string | null;
  /** A repository's scan. */
  scan?: { tags: number; added: number; removed: number; anomalies: string[] };
  /** An automation's pass. */
  pass?: { result: string; commit: string | null; branch: string | null; changes: number };
  message: string;
}

export interface ReconcileDeps {
  config(): LoadedConfig;
  coordinator: Pick<Coordinator, 'publish'>;
  scheduler: Pick<Scheduler, 'next' | 'request' | 'status'>;
  events: Pick<ServeEvents, 'onReport' | 'onScan'>;
  skipped(key: string): SkipReason | null;
  clock: Clock;
}

export interface ReconcileSink {
  reconcile(kind: ReconcileKind, name: string, waitMs: number): Promise<ReconcileAnswer>;
}

const KIND_NAMES = { repository: 'ImageRepository', automation: 'ImageUpdateAutomation' } as const;

export async function reconcile(
  deps: ReconcileDeps,
  kind: ReconcileKind,
  name: string,
  waitMs: number,
): Promise<ReconcileAnswer> {
  const { config, repositoriesOf } = deps.config();
  const object = kind === 'repository' ? config.imageRepositories.get(name) : config.automations.get(name);
  const what = `${KIND_NAMES[kind]} ${name}`;
  if (!object)
    return { status: 404, body: { error: `${what} is not in the running configuration`, message: '' } };
  if (object.spec.suspend)
    return {
      status: 409,
      body: {
        error: `${what} is suspended (spec.suspend: true in ${object.source.file}); pawl resume ${kind} ${name} first`,
        message: '',
      },
    };
  const key = kind === 'repository' ? repositoryJob(name) : automationJob(name);
  const requestedAt = deps.clock.now();
  // `?wait=0` asks for no outcome: nothing is left waiting for the run, and no event is
  // followed (a script that reconciles 10,000 repositories so held 10,000 waits until the last
  // scan, issue 27).
  const waits = waitMs > 0;
  let pass: PassEvent | null = null;
  let scan: ScanEvent | null = null;
  const off = waits
    ? [
        deps.events.onReport((e) => {
          if (!pass && e.automation === name && e.startedAt.getTime() >= requestedAt) pass = e;
        }),
        deps.events.onScan((e) => {
          if (!scan && e.report.name === refKey(object.metadata) && e.at.getTime() >= requestedAt) scan = e;
        }),
      ]
    : [];
  let timer: unknown = null;
  try {
    const next = waits ? deps.scheduler.next(key) : null;
    // As a webhook: its repositories rescanned first (a tag pushed a moment ago is seen).
    const repositories = kind === 'repository' ? [name] : (repositoriesOf.get(name) ?? []);
    await deps.coordinator.publish([
      { key, repositories, tags: [], firstAt: requestedAt, lastAt: requestedAt, events: 1 },
    ]);
    // The work woke this replica's job, or it went to another's: run it here too; whoever
    // claims the lease first runs it, the other finds it held.
    const st = deps.scheduler.status(key);
    if (st && !st.running && !st.queued) void deps.scheduler.request(key);
    const result =
      next === null
        ? 'timeout'
        : await Promise.race([
            next,
            new Promise<'timeout'>((r) => (timer = deps.clock.setTimeout(() => r('timeout'), waitMs))),
          ]);
    if (result === 'timeout')
      return {
        status: 202,
        body: {
          state: deps.scheduler.status(key)?.running ? 'running' : 'queued',
          message: `${what} is queued and not finished after ${Math.round(waitMs / 1000)} s; pawl get ${kind === 'repository' ? 'repositories' : 'automations'} shows its outcome`,
        },
      };
    if (result === null)
      return {
        status: 503,
        body: { error: `${what} was not run: the daemon is stopping or reloaded it away`, message: '' },
      };
    return { status: 200, body: outcome(kind, name, result, pass, scan, deps.skipped(key)) };
  } finally {
    if (timer !== null) deps.clock.clearTimeout(timer);
    for (const o of off) o();
  }
}

function outcome(
  kind: ReconcileKind,
  name: string,
  result: RunResult,
  pass: PassEvent | null,
  scan: ScanEvent | null,
  skipped: SkipReason | null,
): ReconcileOutcome {
  const base = { kind, name, error: result.error };
  if (kind === 'repository' && scan) {
    const r = scan.report;
    const s = {
      tags: r.tags,
      added: r.added.length,
      removed: r.removed.length,
      anomalies: r.anomalies.map((a) => a.kind),
    };
    return {
      ...base,
      state: 'done',
      error: r.error,
      scan: s,
      message: r.error
        ? `the scan failed: ${r.error}`
        : `scanned ${s.tags} tags (${s.added} added, ${s.removed} removed)`,
    };
  }
  const ar = pass?.report.automations[0];
  if (kind === 'automation' && ar) {
    const p = { result: ar.result, commit: ar.commit, branch: ar.branch, changes: ar.changes.length };
    return {
      ...base,
      state: 'done',
      error: ar.error,
      pass: p,
      message:
        ar.result === 'pushed' && ar.commit
          ? `committed ${ar.commit} and pushed it to ${ar.branch ?? 'the branch'} (${p.changes} change${p.changes === 1 ? '' : 's'})`
          : ar.result === 'failed'
            ? `the pass failed: ${ar.error ?? 'unknown error'}`
            : ar.result === 'dry-run'
              ? `dry run: ${p.changes} change${p.changes === 1 ? '' : 's'} computed, nothing written`
              : 'nothing to do: every marker is up to date or kept (pawl explain POLICY says why)',
    };
  }
  if (skipped === 'held')
    return {
      ...base,
      state: 'elsewhere',
      message: "another replica was running it; its outcome is in that replica's log and pawl get",
    };
  return {
    ...base,
    state: 'done',
    message: result.error ? `the run failed: ${result.error}` : 'the run finished',
  };
}
