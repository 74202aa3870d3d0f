/**
 * Each repository's newest finished and newest good scan (`Store.latestScans`), kept between
 * reads by the SQLite store, which writes them. A daemon's every pass asks for all its
 * repositories at once, and reading them again each time was ~5 ms of a 500-image webhook pass's
 * ~50 ms of main-thread work, and the largest single item of it (docs/performance.md, "Issue 27:
 * the latest scans kept"). The store tells the cache what changes them: finishing a scan, and
 * marking a dead one interrupted (a sweep at a scan's beginning), forget that repository; what it
 * cannot follow one by one changes the stamp it reads with (another connection's commit, a failed
 * commit whose rollback took what was read) or clears it (every running scan interrupted at a
 * start).
 *
 * Reads are synchronous on purpose: a read and the keeping of what it read cannot be split by a
 * write in between, which would keep what the write had just made stale. The pairs and their
 * records are shared by every caller, so they are frozen.
 */
import type { ScanRecord } from '../records/index.js';
import type { LatestScans, LatestScansOf } from './types.js';
import { lookupOf, sharedNameKey } from '../util/index.js';

/** Reads the latest scans of these repositories (every name a key) from the database. */
export type LatestScansRead = (repositories: readonly string[]) => Map<string, LatestScans>;

const freeze = (scan: ScanRecord | null): ScanRecord | null => {
  if (scan === null || Object.isFrozen(scan)) return scan;
  Object.freeze(scan.added);
  Object.freeze(scan.removed);
  Object.freeze(scan.anomalies);
  return Object.freeze(scan);
};

export class LatestScansCache {
  readonly #byRepo = new Map<string, LatestScans>();
  #stamp: string | undefined;

  constructor(private readonly read: LatestScansRead) {}

  /**
   * `stamp`: what the database is now, as far as this store cannot follow it itself; a different
   * stamp from the last read's forgets everything kept.
   */
  of(repositories: readonly string[], stamp: string): LatestScansOf {
    if (stamp !== this.#stamp) {
      this.#byRepo.clear();
      this.#stamp = stamp;
    }
    const missing = repositories.filter((r) => !this.#byRepo.has(r));
    if (missing.length > 0)
      for (const [repository, latest] of this.read(missing))
        this.#byRepo.set(
          sharedNameKey(repository),
          Object.freeze({ finished: freeze(latest.finished), good: freeze(latest.good) }),
        );
    // The kept pairs themselves, frozen as their records: a new pair for each repository at each
    // read was two of them a daemon's pass at 10,000 images (~0.8 MB, issue 27). Names asked in
    // order (a pass's) are answered by a table over them, not a Map of its own.
    const pairs = repositories.map((r) => this.#byRepo.get(r)!);
    return lookupOf(repositories, pairs);
  }

  /** A scan of the repository began or finished. */
  forget(repository: string): void {
    this.#byRepo.delete(repository);
  }

  clear(): void {
    this.#byRepo.clear();
  }
}
