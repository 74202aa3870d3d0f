/**
 * The reflector half of pawl: list an ImageRepository's tags, drop excluded ones and record
 * the observation. A scan is complete or it failed (SPEC §2): a failure stores no tags, and the
 * previous good scan stays current.
 */
import { compileRegex } from '../go/index.js';
import { type ImageRepository, refKey } from '../config/index.js';
import type { Anomaly, ScanRecord, ScanReport } from '../records/index.js';
import type { Store } from '../store/index.js';
import { describeAnomaly, diffTags } from './diff.js';
import { type Logger, errorMessage } from '../util/index.js';
import type { RecordedResponse, RegistryClient, RepositoryRef } from './registry/types.js';
import { parseRepositoryRef } from './registry/reference.js';

export type { Anomaly, ScanReport };

/** The store as a scan uses it (docs/store.md, "Who reads and writes what"). */
export type ScanStore = Pick<Store, 'beginScan' | 'finishScan' | 'lastGoodScan'>;

export interface ScanDeps {
  client: RegistryClient;
  store: ScanStore;
  now?: () => Date;
  log: Logger;
  signal?: AbortSignal;
  /** Turns `spec.image` (and `insecure`) into the client's reference; default `defaultReference`. */
  reference?: (repo: ImageRepository) => RepositoryRef;
}

/**
 * Parsed once per ImageRepository object: a pass asks for it when it builds the repository's
 * client and again when it scans (~35 µs each, unoptimised), and the daemon every interval. A
 * reloaded configuration brings new objects, so an edited image is parsed afresh.
 */
const references = new WeakMap<ImageRepository, { image: string; insecure: boolean; ref: RepositoryRef }>();

export function defaultReference(repo: ImageRepository): RepositoryRef {
  const { image, insecure } = repo.spec;
  const known = references.get(repo);
  if (known && known.image === image && known.insecure === insecure) return known.ref;
  const ref = Object.freeze(parseRepositoryRef(image, { insecure }));
  references.set(repo, { image, insecure, ref });
  return ref;
}

/** Compiles `exclusionList` (Go RE2, unanchored). The config loader has validated the patterns. */
export function exclusionFilter(patterns: readonly string[]): (tag: string) => boolean {
  // compileRegex caches by pattern: rescanning 500 repositories compiles `^.*\.sig$` once.
  const compiled = patterns.map((p) => compileRegex(p));
  return (tag) => !compiled.some((re) => re.test(tag));
}

/** What a failed listing carried, if the client attached it to the error (responses, request count). */
function failureDetails(err: unknown): { requests: number; responses: RecordedResponse[] } {
  const e = err as { requests?: unknown; responses?: unknown } | null;
  const requests = typeof e?.requests === 'number' ? e.requests : 0;
  const responses = Array.isArray(e?.responses) ? (e.responses as RecordedResponse[]) : [];
  return { requests, responses };
}

/** Settles with the listing, or rejects when `signal` aborts, should a client not honour it. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.reject(signal.reason as Error);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e as Error);
      },
    );
  });
}

function timeoutMessage(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

export async function scanRepository(repo: ImageRepository, deps: ScanDeps): Promise<ScanReport> {
  const name = refKey(repo.metadata);
  const image = repo.spec.image;
  const now = deps.now ?? (() => new Date());
  const known = async () => (await deps.store.lastGoodScan(name))?.tagCount ?? 0;
  const base = { name, image, anomalies: [] as Anomaly[], added: [] as string[], removed: [] as string[] };
  if (repo.spec.suspend) {
    deps.log.info({ repository: name }, 'scan skipped: the ImageRepository is suspended');
    return {
      ...base,
      tags: await known(),
      scanned: false,
      suspended: true,
      error: null,
      requests: 0,
    };
  }

  const id = await deps.store.beginScan(name, image, now());
  const started = performance.now();
  // A ref'd timer rather than AbortSignal.timeout: the deadline must hold even when nothing else
  // keeps the process alive. One controller for the deadline and the caller's signal, not
  // AbortSignal.any (its weak references and finalizers cost more than the rest of this).
  const controller = new AbortController();
  const signal = controller.signal;
  let timedOut = false;
  // A little grace, so a client that enforces the same timeout reports its own, more precise error.
  const grace = Math.min(1000, Math.ceil(repo.spec.timeout / 10));
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error('timeout'));
  }, repo.spec.timeout + grace);
  const caller = deps.signal;
  const onCaller = (): void => controller.abort(caller?.reason);
  if (caller?.aborted) onCaller();
  else caller?.addEventListener('abort', onCaller, { once: true });
  try {
    const ref = (deps.reference ?? defaultReference)(repo);
    const list = await untilAborted(deps.client.listTags(ref, { signal }), signal);
    // A listing that resolves after the deadline is still too late: no half-timed data.
    if (signal.aborted) throw signal.reason;
    const keep = exclusionFilter(repo.spec.exclusionList);
    let first = false;
    const tags = list.tags.filter(keep);
    const rec = await deps.store.finishScan(
      id,
      {
        outcome: 'ok',
        tags,
        ...(list.invalid ? { anomalies: [{ kind: 'invalid-tags' as const, ...list.invalid }] } : {}),
        requests: list.requests,
        responses: list.responses,
        endedAt: now(),
      },
      (previous, current) => {
        first = previous === null;
        return diffTags(previous, current);
      },
    );
    const ms = Math.round(performance.now() - started);
    // Info only when a listing changed since the last good one: a daemon rescanning 10,000
    // unchanged repositories, or scanning them all for the first time on an empty state, would
    // otherwise write 10,000 lines that say nothing the pass's line does not, and writing them
    // was a tenth of its first pass's scan work (issue 27).
    const changed = !first && (rec.added.length > 0 || rec.removed.length > 0);
    const fields = {
      repository: name,
      tags: rec.tagCount,
      added: rec.added.length,
      removed: rec.removed.length,
      excluded: list.tags.length - tags.length,
      pages: list.pages,
      requests: list.requests,
      ms,
    };
    if (changed) deps.log.info(fields, 'scanned');
    else deps.log.debug(fields, 'scanned');
    // Info, not warn: the report carries anomalies and errors to whoever shows them (table, --json, serve).
    for (const a of rec.anomalies) deps.log.info({ repository: name, anomaly: a.kind }, describeAnomaly(a));
    return {
      ...base,
      tags: rec.tagCount ?? 0,
      scanned: true,
      suspended: false,
      anomalies: rec.anomalies,
      error: null,
      added: rec.added,
      removed: rec.removed,
      requests: rec.requests,
    };
  } catch (err) {
    let message: string;
    if (timedOut && !deps.signal?.aborted) {
      message = `scan of ${image} timed out after ${timeoutMessage(repo.spec.timeout)} (spec.timeout of ImageRepository ${name})`;
    } else if (deps.signal?.aborted) {
      message = `scan of ${image} was cancelled`;
    } else {
      message = errorMessage(err);
    }
    const details = failureDetails(err);
    await deps.store.finishScan(
      id,
      {
        outcome: 'failed',
        error: message,
        requests: details.requests,
        responses: details.responses,
        endedAt: now(),
      },
      diffTags,
    );
    deps.log.info({ repository: name, error: message }, 'scan failed; the previous tags stay current');
    return {
      ...base,
      tags: await known(),
      scanned: false,
      suspended: false,
      error: message,
      requests: details.requests,
    };
  } finally {
    clearTimeout(timer);
    caller?.removeEventListener('abort', onCaller);
  }
}

/**
 * Whether a repository should be scanned now, given its last finished scan (`lastFinishedScan`,
 * or `latestScans(…).finished`): never scanned (for its current image), or its last finished
 * scan (good or failed) began at least `spec.interval` ago. Suspended: never due. Failed scans
 * count, so a broken registry is retried once per interval, not on every run.
 */
export function isScanDue(repo: ImageRepository, last: ScanRecord | null, now: Date): boolean {
  if (repo.spec.suspend) return false;
  if (!last || last.image !== repo.spec.image) return true;
  return now.getTime() - last.startedAt.getTime() >= repo.spec.interval;
}

/** Scans with at most `concurrency` in flight; reports come back in the order of `repos`. */
export async function scanRepositories(
  repos: readonly ImageRepository[],
  deps: Omit<ScanDeps, 'client'> & { client: RegistryClient | ((repo: ImageRepository) => RegistryClient) },
  opts: { concurrency?: number; onDone?: (report: ScanReport, done: number, total: number) => void } = {},
): Promise<ScanReport[]> {
  const reports: ScanReport[] = new Array<ScanReport>(repos.length);
  const width = Math.max(1, Math.min(opts.concurrency ?? 4, repos.length));
  let next = 0;
  let done = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      const repo = repos[i];
      if (repo === undefined) return;
      const client = typeof deps.client === 'function' ? deps.client(repo) : deps.client;
      let report: ScanReport;
      try {
        report = await scanRepository(repo, { ...deps, client });
      } catch (err) {
        // The store itself failed (disk full, locked): report it against this repository.
        report = {
          name: refKey(repo.metadata),
          image: repo.spec.image,
          tags: 0,
          scanned: false,
          suspended: repo.spec.suspend,
          anomalies: [],
          error: errorMessage(err),
          added: [],
          removed: [],
          requests: 0,
        };
      }
      reports[i] = report;
      opts.onDone?.(report, ++done, repos.length);
    }
  };
  await Promise.all(Array.from({ length: width }, worker));
  return reports;
}
