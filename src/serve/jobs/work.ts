/**
 * Queued webhook work: an accepted webhook becomes work items for the jobs it concerns
 * (published where every replica sees it), and a job's run folds what it took into what it
 * does. Which pushed tags the registry does not list yet decides a settle retry.
 */
import type { Store } from '../../store/index.js';
import type { Coordinator, TakenWork } from '../cluster/index.js';
import type { LoadedConfig } from '../source/index.js';
import { automationJob, repositoryJob } from './types.js';

/** Webhooks folded into an automation's next pass: which repositories to rescan, and since when. */
export interface Pending {
  repositories: Set<string>;
  /** Pushed tags the webhooks named (`ns/name:tag`), awaited in the registry's tag lists. */
  tags: Set<string>;
  firstAt: number;
  /**
   * When the newest of them arrived: a scan that began after it lists what each announced. Null
   * when that is not known (work read back after a restart, or from the PostgreSQL queue) or when
   * a settle retry needs a scan newer than its last pass's: the pass then asks for one that
   * begins after it takes the work.
   */
  lastAt: number | null;
  count: number;
  /** Passes already re-run because the pushed tag was not readable yet. */
  retries: number;
}

/** `ns/name` of an awaited `ns/name:tag` (a tag holds no `:`). */
function repositoryOfTag(t: string): string {
  return t.slice(0, t.lastIndexOf(':'));
}

/** Adds `from`'s repositories and tags to `into`, keeping the earliest and the newest arrival. */
function fold(into: Pending, from: Pick<Pending, 'repositories' | 'tags' | 'firstAt' | 'lastAt'>): Pending {
  for (const r of from.repositories) into.repositories.add(r);
  for (const t of from.tags) into.tags.add(t);
  into.firstAt = Math.min(into.firstAt, from.firstAt);
  into.lastAt = into.lastAt === null || from.lastAt === null ? null : Math.max(into.lastAt, from.lastAt);
  return into;
}

/** Nothing folded in yet, with the arrivals of what is folded in first. */
const empty = (first: Pick<Pending, 'firstAt' | 'lastAt'>): Pending => ({
  repositories: new Set(),
  tags: new Set(),
  firstAt: first.firstAt,
  lastAt: first.lastAt,
  count: 0,
  retries: 0,
});

/** The webhooks a pass folds in: its own settle retries and what the queue held for it. */
export function mergePending(local: Pending | undefined, work: TakenWork | null): Pending | undefined {
  if (!work) return local;
  const taken = {
    repositories: new Set(work.repositories),
    tags: new Set(work.tags),
    firstAt: work.firstAt,
    lastAt: work.lastAt ?? null,
  };
  // Taken into nothing: these sets themselves (a reconciled automation's names every repository).
  const p = local ? fold(local, taken) : { ...taken, count: 0, retries: 0 };
  p.count += work.events;
  return p;
}

/** A settle retry's webhooks, carried into what is pending for the next pass (one retry more). */
export function carryPending(local: Pending | undefined, retried: Pending): Pending {
  const p = fold(local ?? empty(retried), retried);
  p.retries = Math.max(p.retries, retried.retries + 1);
  // The retried pass's scan began after these arrived and did not list the tag: a newer one.
  p.lastAt = null;
  return p;
}

/**
 * From when a pass's scans must have begun to list what its webhooks announced: the newest
 * arrival folded in, or the moment the pass took its work when that is not known.
 */
export function scanSince(pending: Pending | undefined, takenAt: number): number {
  const last = pending?.lastAt ?? null;
  return last === null ? takenAt : Math.min(last, takenAt);
}

/** The awaited tags (`ns/name:tag`) that the last good scan of their repository does not list. */
export async function unlistedTags(store: Store, tags: Iterable<string>): Promise<string[]> {
  const awaited = [...tags];
  if (awaited.length === 0) return [];
  const current = await store.currentTagsOf([...new Set(awaited.map(repositoryOfTag))]);
  const listed = new Set([...current].flatMap(([repo, list]) => list.map((tag) => `${repo}:${tag}`)));
  return awaited.filter((t) => !listed.has(t));
}

/**
 * An accepted webhook: the automations depending on the named repositories run at once (their
 * pass rescans those repositories first); a repository no automation uses is rescanned. Many
 * events for one automation fold into its running pass's single follow-up. Queued where every
 * replica sees it; the replica that runs the job is woken (maybe this one).
 */
export async function publishWebhook(
  coordinator: Pick<Coordinator, 'publish'>,
  { config, dependents }: Pick<LoadedConfig, 'config' | 'dependents'>,
  firstAt: number,
  event: { repositories: readonly string[]; automations: readonly string[]; tags: readonly string[] },
): Promise<{ automations: string[]; repositories: string[] }> {
  const { repositories, automations: named, tags } = event;
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
  const tagsOf = (repos: Iterable<string>) => {
    const want = new Set(repos);
    return tags.filter((t) => want.has(repositoryOfTag(t)));
  };
  await coordinator.publish([
    ...[...touched].map(([a, repos]) => ({
      key: automationJob(a),
      repositories: [...repos].sort(),
      tags: tagsOf(repos),
      firstAt,
      lastAt: firstAt,
      events: 1,
    })),
    ...alone.map((r) => ({
      key: repositoryJob(r),
      repositories: [r],
      tags: tagsOf([r]),
      firstAt,
      lastAt: firstAt,
      events: 1,
    })),
  ]);
  return { automations: [...touched.keys()], repositories: alone };
}
