/**
 * The rows of `pawl get` (docs/cli.md), the columns of Flux's `flux get images …`: built either
 * from the configuration and the store, or from a running daemon's JSON API — the same rows
 * either way, so the table and `--json` do not depend on where they came from.
 */
import { refKey, type Config } from '../config/index.js';
import type { Store } from '../store/index.js';

export type Ready = 'True' | 'False' | 'Unknown';

export interface RepositoryRow {
  namespace: string;
  name: string;
  image: string;
  suspended: boolean;
  ready: Ready;
  lastScan: string | null;
  tags: number | null;
  message: string;
}

export interface PolicyRow {
  namespace: string;
  name: string;
  suspended: boolean;
  ready: Ready;
  latestImage: string | null;
  selectedAt: string | null;
  message: string;
}

export interface AutomationRow {
  namespace: string;
  name: string;
  suspended: boolean;
  ready: Ready;
  lastRun: string | null;
  commit: string | null;
  message: string;
}

export interface Rows {
  repositories: RepositoryRow[];
  policies: PolicyRow[];
  automations: AutomationRow[];
}

const split = (key: string): { namespace: string; name: string } => {
  const i = key.indexOf('/');
  return { namespace: key.slice(0, i), name: key.slice(i + 1) };
};

const iso = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);

function repositoryRow(
  key: string,
  image: string,
  suspended: boolean,
  last: { at: string; outcome: string; tags: number | null; error: string | null } | null,
  goodTags: number | null,
): RepositoryRow {
  const failed = last !== null && last.outcome === 'failed';
  return {
    ...split(key),
    image,
    suspended,
    ready: last === null ? 'Unknown' : failed ? 'False' : 'True',
    lastScan: last?.at ?? null,
    tags: goodTags,
    message:
      last === null
        ? 'not scanned yet'
        : failed
          ? (last.error ?? 'the scan failed')
          : `successful scan: found ${last.tags ?? 0} tags`,
  };
}

function policyRow(
  key: string,
  image: string | null,
  suspended: boolean,
  sel: { candidate: string | null; at: string | null; error: string | null } | null,
): PolicyRow {
  const latest = sel?.candidate && image ? `${image}:${sel.candidate}` : null;
  return {
    ...split(key),
    suspended,
    ready: sel === null ? 'Unknown' : sel.candidate !== null ? 'True' : 'False',
    latestImage: latest,
    selectedAt: sel?.at ?? null,
    message:
      sel === null
        ? 'not evaluated yet'
        : sel.candidate !== null
          ? `latest tag resolved to ${sel.candidate}`
          : (sel.error ?? 'no candidate'),
  };
}

function automationRow(
  key: string,
  suspended: boolean,
  last: { at: string; result: string | null; commit: string | null; error: string | null } | null,
  none: string,
): AutomationRow {
  return {
    ...split(key),
    suspended,
    ready: last === null ? 'Unknown' : last.result === 'failed' ? 'False' : 'True',
    lastRun: last?.at ?? null,
    commit: last?.commit ?? null,
    message:
      last === null
        ? none
        : last.result === 'failed'
          ? (last.error ?? 'the pass failed')
          : last.result === 'pushed' && last.commit
            ? `committed and pushed ${last.commit.slice(0, 12)}`
            : last.result === 'dry-run'
              ? 'dry run: nothing written'
              : 'no updates made',
  };
}

interface StoredResult {
  automations?: { name?: unknown; result?: unknown; commit?: unknown; error?: unknown }[];
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/**
 * The rows from the configuration and the store (what the last `pawl run` or daemon recorded);
 * with no store yet (nothing ever ran), every object as the configuration has it, state unknown.
 */
export async function rowsFromStore(config: Config, store: Store | null): Promise<Rows> {
  const repos = [...config.imageRepositories.values()];
  const latest = store ? await store.latestScans(repos.map((r) => refKey(r.metadata))) : new Map();
  const repositories = repos.map((r) => {
    const key = refKey(r.metadata);
    const { finished, good } = latest.get(key) ?? { finished: null, good: null };
    return repositoryRow(
      key,
      r.spec.image,
      r.spec.suspend,
      finished
        ? {
            at: finished.startedAt.toISOString(),
            outcome: finished.outcome,
            tags: finished.tagCount,
            error: finished.error,
          }
        : null,
      good?.tagCount ?? null,
    );
  });
  const pols = [...config.imagePolicies.values()];
  const selections = store ? await store.latestSelections(pols.map((p) => refKey(p.metadata))) : new Map();
  const policies = pols.map((p) => {
    const key = refKey(p.metadata);
    const sel = selections.get(key);
    const image = config.imageRepositories.get(refKey(p.spec.imageRepositoryRef))?.spec.image ?? null;
    return policyRow(
      key,
      image,
      p.spec.suspend,
      sel ? { candidate: sel.candidate, at: iso(sel.at), error: sel.error } : null,
    );
  });
  // The newest recorded run of each automation: its decisions name it, its record holds the result.
  const lastRun = new Map<string, { runId: number; at: Date }>();
  for (const d of store ? await store.decisions({ limit: 1000 }) : [])
    if ((d.runKind === 'run' || d.runKind === 'dry-run') && !lastRun.has(d.automation))
      lastRun.set(d.automation, { runId: d.runId, at: d.at });
  const automations = await Promise.all(
    [...config.automations.values()].map(async (a) => {
      const key = refKey(a.metadata);
      const run = lastRun.get(key);
      const record = run && store ? await store.getRun(run.runId) : null;
      const result = (record?.result ?? null) as StoredResult | null;
      const mine = result?.automations?.find((x) => x.name === key);
      return automationRow(
        key,
        a.spec.suspend,
        run
          ? {
              at: run.at.toISOString(),
              result: str(mine?.result) ?? (record?.kind === 'dry-run' ? 'dry-run' : null),
              commit: str(mine?.commit),
              error: str(mine?.error),
            }
          : null,
        'no recorded run',
      );
    }),
  );
  return { repositories, policies, automations };
}

/** What the daemon's `/api/v1/repositories`, `/policies` and `/automations` answer (docs/api.md). */
export interface ApiRepository {
  name: string;
  image: string;
  suspended: boolean;
  tags: number | null;
  lastScan: { startedAt: string; outcome: string; tags: number | null; error: string | null } | null;
}
export interface ApiPolicy {
  name: string;
  repository: string;
  suspended?: boolean;
  candidate: string | null;
  selectedAt: string | null;
  error: string | null;
}
export interface ApiAutomation {
  name: string;
  suspended: boolean;
  lastPass: { startedAt: string; result: string | null; commit: string | null; error: string | null } | null;
}

export function rowsFromApi(repos: ApiRepository[], pols: ApiPolicy[], autos: ApiAutomation[]): Rows {
  const images = new Map(repos.map((r) => [r.name, r.image]));
  return {
    repositories: repos.map((r) =>
      repositoryRow(
        r.name,
        r.image,
        r.suspended,
        r.lastScan ? { ...r.lastScan, at: r.lastScan.startedAt } : null,
        r.tags,
      ),
    ),
    policies: pols.map((p) =>
      policyRow(
        p.name,
        images.get(p.repository) ?? null,
        p.suspended === true,
        p.selectedAt === null ? null : { candidate: p.candidate, at: p.selectedAt, error: p.error },
      ),
    ),
    automations: autos.map((a) =>
      automationRow(
        a.name,
        a.suspended,
        a.lastPass ? { ...a.lastPass, at: a.lastPass.startedAt } : null,
        'no pass since the daemon started',
      ),
    ),
  };
}
