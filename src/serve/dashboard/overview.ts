/**
 * The overview: every marked line's state in words and what needs a person first, from the
 * store and the running configuration. Pure over its inputs except for the store reads.
 */
import { refKey } from '../../config/index.js';
import type { DecisionRecord, ScanRecord } from '../../records/index.js';
import type { LatestScansOf, Store } from '../../store/index.js';
import { describeAnomaly } from '../../scan/index.js';
import {
  calmWords,
  configurationAttention,
  foldAttention,
  markerState,
  meaningOf,
  type AttentionInput,
} from './attention.js';
import {
  forgeCommitUrl,
  iso,
  MARKER_STATES,
  STATE_LABELS,
  type AutomationView,
  type DashboardSource,
  type MarkerState,
  type MarkerView,
  type Overview,
  type PolicyView,
  type RepositoryView,
  type RunResultShape,
} from './types.js';

async function policyViews(src: DashboardSource, latest: LatestScansOf): Promise<PolicyView[]> {
  const out: PolicyView[] = [];
  const all = [...src.config.imagePolicies.values()];
  const names = all.map((p) => refKey(p.metadata));
  const [states, selections, stales] = await Promise.all([
    src.store.policyStates(names),
    src.store.latestSelections(names),
    src.store.latestEvents('stale-scan', names),
  ]);
  for (const [i, p] of all.entries()) {
    const name = names[i]!;
    const repository = refKey(p.spec.imageRepositoryRef);
    const state = states.get(name);
    const sel = selections.get(name);
    const lastGood = latest.get(repository)?.good ?? null;
    const lastStale = stales.get(name);
    // Stale while no good scan has started since the ratchet last refused the list.
    const stale =
      lastStale && lastGood && lastStale.at.getTime() >= lastGood.startedAt.getTime()
        ? staleWords(lastGood, state?.highWater ?? null)
        : null;
    out.push({
      name,
      repository,
      strategy: p.spec.policy.strategy,
      candidate: sel?.candidate ?? null,
      selectedAt: iso(sel?.at),
      highWater: state?.highWater ?? null,
      highWaterAt: iso(state?.highWaterAt),
      pending: state?.pending
        ? {
            candidate: state.pending.candidate,
            count: state.pending.count,
            firstAt: state.pending.firstAt.toISOString(),
            lastAt: state.pending.lastAt.toISOString(),
          }
        : null,
      error: sel?.error ?? null,
      stale,
    });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

function staleWords(scan: ScanRecord, highWater: string | null): string {
  const what = scan.anomalies.map((a) => describeAnomaly(a, 3)).join('; ');
  return (
    `The registry's last tag list looks stale${what ? ` (${what})` : ''}` +
    (highWater ? `; pawl keeps the high-water mark ${highWater}, which still exists.` : '.')
  );
}

function repositoryViews(src: DashboardSource, latest: LatestScansOf): RepositoryView[] {
  return [...src.config.imageRepositories.values()]
    .map((r) => {
      const name = refKey(r.metadata);
      const last = latest.get(name)?.finished ?? null;
      return {
        name,
        image: r.spec.image,
        interval: r.spec.interval,
        tags: latest.get(name)?.good?.tagCount ?? null,
        lastScan: last
          ? {
              at: last.startedAt.toISOString(),
              outcome: last.outcome,
              tags: last.tagCount,
              anomalies: last.anomalies.map((a) => describeAnomaly(a, 5)),
              error: last.error,
            }
          : null,
      };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** The decisions of each automation's latest pass (of kind run or dry-run), newest run first. */
function latestDecisions(recent: readonly DecisionRecord[]): Map<string, DecisionRecord[]> {
  const byAutomation = new Map<string, DecisionRecord[]>();
  const runOf = new Map<string, number>();
  for (const d of recent) {
    if (d.runKind !== 'run' && d.runKind !== 'dry-run') continue;
    const run = runOf.get(d.automation);
    if (run === undefined) runOf.set(d.automation, d.runId);
    else if (run !== d.runId) continue;
    byAutomation.set(d.automation, [...(byAutomation.get(d.automation) ?? []), d]);
  }
  return byAutomation;
}

/** The newest commit pawl made for the automation: from the store's runs (it outlives restarts). */
async function lastCommit(
  store: Pick<Store, 'getRun'>,
  recent: readonly DecisionRecord[],
  automation: string,
): Promise<{ sha: string; at: Date; kind: string } | null> {
  const seen = new Set<number>();
  for (const d of recent) {
    if (d.automation !== automation || d.action !== 'write' || seen.has(d.runId)) continue;
    seen.add(d.runId);
    if (seen.size > 50) break;
    const run = await store.getRun(d.runId);
    const result = (run?.result ?? null) as RunResultShape | null;
    if (!run || !result) continue;
    const a = result.automations?.find((x) => x.name === automation);
    const sha =
      typeof a?.commit === 'string' ? a.commit : typeof result.commit === 'string' ? result.commit : null;
    if (sha && run.kind !== 'dry-run') return { sha, at: run.at, kind: run.kind };
  }
  return null;
}

async function automationViews(
  src: DashboardSource,
  recent: readonly DecisionRecord[],
): Promise<AutomationView[]> {
  const all = [...src.config.automations.values()];
  const storedCommits = await Promise.all(all.map((a) => lastCommit(src.store, recent, refKey(a.metadata))));
  return all
    .map((a, i) => {
      const name = refKey(a.metadata);
      const git = src.config.gitRepositories.get(refKey(a.spec.sourceRef));
      const pass = src.lastPass.get(name);
      const ar = pass?.report.automations[0];
      const stored = storedCommits[i]!;
      const live =
        ar?.commit && ar.result === 'pushed' ? { sha: ar.commit, at: pass!.endedAt, kind: 'run' } : null;
      const commit = live && (!stored || live.at >= stored.at) ? live : stored;
      const policies = [...src.config.imagePolicies.values()]
        .filter((p) => (src.repositoriesOf.get(name) ?? []).includes(refKey(p.spec.imageRepositoryRef)))
        .map((p) => refKey(p.metadata));
      return {
        name,
        suspended: a.spec.suspend,
        git: git
          ? {
              name: refKey(git.metadata),
              url: git.spec.url,
              // A templated push branch is named by each pass: show the last pass's.
              branch: a.spec.git?.push?.branch?.includes('{{')
                ? (ar?.branch ?? null)
                : (a.spec.git?.push?.branch ?? git.spec.ref?.branch ?? null),
            }
          : null,
        policies,
        lastPass: pass
          ? {
              at: pass.endedAt.toISOString(),
              trigger: pass.trigger,
              result: ar?.result ?? null,
              error: ar?.error ?? null,
            }
          : null,
        lastCommit: commit
          ? {
              sha: commit.sha,
              at: commit.at.toISOString(),
              url: git ? forgeCommitUrl(git.spec.url, commit.sha) : null,
              kind: commit.kind,
            }
          : null,
        pullRequest: ar?.pullRequest
          ? {
              number: ar.pullRequest.number,
              url: ar.pullRequest.url,
              action: ar.pullRequest.action,
              state: ar.pullRequest.state,
            }
          : null,
      };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** An up-to-date line pawl upgraded within this long shows as "upgrade written". */
export const RECENT_UPGRADE_MS = 24 * 60 * 60_000;

/** The newest write of each line (`automation|file|line`), by a run that was not a dry run. */
function lastWrites(recent: readonly DecisionRecord[]): Map<string, DecisionRecord> {
  const out = new Map<string, DecisionRecord>();
  for (const d of recent) {
    const key = `${d.automation}|${d.file}|${d.line}`;
    if (d.action === 'write' && d.runKind === 'run' && !out.has(key)) out.set(key, d);
  }
  return out;
}

export async function overview(src: DashboardSource): Promise<Overview> {
  // The newest decisions once, for the markers, the last writes and the last commits.
  const [recent, latest] = await Promise.all([
    src.store.decisions({ limit: 5000 }),
    src.store.latestScans([...src.config.imageRepositories.keys()]),
  ]);
  const policies = await policyViews(src, latest);
  const writes = lastWrites(recent);
  const repositories = repositoryViews(src, latest);
  const automations = await automationViews(src, recent);
  const byPolicy = new Map(policies.map((p) => [p.name, p]));
  const markers: MarkerView[] = [];
  for (const [, decisions] of latestDecisions(recent)) {
    for (const d of decisions) {
      if (!src.config.automations.has(d.automation)) continue;
      let state = markerState(d.reason, byPolicy.get(d.policy));
      let detail = d.detail;
      const w = writes.get(`${d.automation}|${d.file}|${d.line}`);
      // The pass after an upgrade finds the line up to date; the upgrade is what a person wants to see.
      if (
        state === 'up-to-date' &&
        w &&
        w.candidate === d.candidate &&
        src.now.getTime() - w.at.getTime() < RECENT_UPGRADE_MS
      ) {
        state = 'upgrade';
        detail = `pawl wrote ${w.candidate} over ${w.current} at ${w.at.toISOString()}. ${d.detail}`;
      }
      markers.push({
        automation: d.automation,
        file: d.file,
        line: d.line,
        setter: d.setter,
        policy: d.policy,
        current: d.current,
        candidate: d.candidate,
        reason: d.reason,
        action: d.action,
        state,
        label: STATE_LABELS[state],
        detail,
        meaning: meaningOf(state === 'upgrade' ? 'upgrade' : d.reason),
        at: d.at.toISOString(),
        dryRun: d.runKind === 'dry-run',
      });
    }
  }
  markers.sort(
    (a, b) =>
      MARKER_STATES.indexOf(a.state) - MARKER_STATES.indexOf(b.state) ||
      a.file.localeCompare(b.file) ||
      a.line - b.line,
  );
  const raw: AttentionInput[] = configurationAttention(src.configuration);
  // A marker that points nowhere is never updated, and says nothing anywhere else on the page.
  for (const [name, pass] of src.lastPass)
    for (const w of pass.report.automations[0]?.warnings ?? [])
      if (w.line !== undefined && src.config.automations.has(name))
        raw.push({
          state: 'error',
          title: `${w.file}:${w.line} — marker points nowhere`,
          why: `${name}: ${w.message}`,
          href: '#/',
        });
  for (const r of repositories)
    if (r.lastScan?.outcome === 'failed')
      raw.push({
        state: 'error',
        title: `Scans of ${r.name} fail`,
        why: r.lastScan.error ?? 'the last scan failed',
        href: `#/repository/${r.name}`,
      });
  for (const a of automations)
    if (a.lastPass?.error)
      raw.push({
        state: 'error',
        title: `${a.name} failed`,
        why: a.lastPass.error,
        href: '#/',
      });
  for (const p of policies)
    if (p.stale)
      raw.push({
        state: 'stale',
        title: `${p.name}: stale registry`,
        why: p.stale,
        href: `#/repository/${p.repository}`,
      });
  const notable: MarkerState[] = ['error', 'candidate-missing', 'unverified', 'downgrade-blocked', 'pinned'];
  for (const m of markers)
    if (notable.includes(m.state))
      raw.push({
        state: m.state,
        title: `${m.file}:${m.line} — ${STATE_LABELS[m.state]}`,
        why: m.detail,
        href: `#/policy/${m.policy}`,
      });
  // Stable: the configuration's items stay first among the errors.
  raw.sort((a, b) => MARKER_STATES.indexOf(a.state) - MARKER_STATES.indexOf(b.state));
  const attention = foldAttention(raw);
  const counts = Object.fromEntries(MARKER_STATES.map((s) => [s, 0])) as Record<MarkerState, number>;
  for (const m of markers) counts[m.state]++;
  const configuration = {
    paths: [...(src.configPaths ?? [])],
    automations: src.config.automations.size,
    policies: src.config.imagePolicies.size,
    repositories: src.config.imageRepositories.size,
  };
  return {
    generatedAt: src.now.toISOString(),
    dryRun: src.dryRun,
    configuration,
    calm:
      attention.length > 0
        ? null
        : calmWords({
            ...configuration,
            suspended: [...src.config.automations.values()].filter((a) => a.spec.suspend).length,
            passes: automations.filter((a) => a.lastPass).length,
            markers: markers.length,
          }),
    automations,
    policies,
    repositories,
    markers,
    attention,
    counts,
  };
}
