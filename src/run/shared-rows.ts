/**
 * The rows of a pass's report a daemon shares between passes (issue 27). A webhook pass for one
 * changed image among 500 reports 500 repositories and 500 policies, 998 of them as the pass
 * before did; the store compares each row with its base's by the digest of its JSON
 * (store/result.ts), and made 1,000 JSON texts and SHA-256 digests a pass to find the two that
 * changed. Here a row equal to the one the last pass reported for the same object is that row,
 * the same frozen object, so its digest is made once (the store keeps the digest of a frozen
 * row for as long as the row lives). The comparison is of the fields a row is made of, before
 * it is made: an unchanged object's row costs nothing a pass.
 *
 * Only a daemon holds one (through its OutcomeCache); `pawl run` makes fresh rows every time.
 */
import type { Config } from '../config/index.js';
import type { PolicyReport, RepositoryReport } from '../records/index.js';
import { policyReport, type PolicyOutcome } from './policies.js';

export class SharedRows {
  readonly #repositories = new Map<string, RepositoryReport>();
  readonly #policies = new Map<string, PolicyReport>();
  #config: Config | null = null;

  /** Forgets the rows of objects a new configuration no longer has, once a configuration. */
  prune(config: Config): void {
    if (this.#config === config) return;
    for (const name of this.#repositories.keys())
      if (!config.imageRepositories.has(name)) this.#repositories.delete(name);
    for (const name of this.#policies.keys())
      if (!config.imagePolicies.has(name)) this.#policies.delete(name);
    this.#config = config;
  }

  /**
   * The row of a repository this pass did not scan (`unscannedRow`): the one kept for it when
   * equal, else a new one, kept from now on. Only such rows are kept here, so the fields compared
   * are its arguments, before any row is made: an unchanged repository costs no allocation.
   */
  unscanned(name: string, tags: number, error: string | null, errorAt: string | undefined): RepositoryReport {
    const was = this.#repositories.get(name);
    if (was !== undefined && was.tags === tags && was.error === error && was.errorAt === errorAt) return was;
    return keep(this.#repositories, unscannedRow(name, tags, error, errorAt));
  }

  /** The row of `o`: the one kept for its policy when equal, else `policyReport(o)`, kept from now on. */
  policy(o: PolicyOutcome): PolicyReport {
    const was = this.#policies.get(o.name);
    if (
      was !== undefined &&
      was.candidate === (o.candidate?.tag ?? null) &&
      was.highWater === (o.ratchet?.highWater ?? null) &&
      was.error === o.error &&
      was.unverified?.tag === o.unverified?.tag &&
      was.unverified?.why === o.unverified?.why
    )
      return was;
    return keep(this.#policies, policyReport(o));
  }
}

/** The report's row of a repository a pass did not scan: what was known before it. */
export function unscannedRow(
  name: string,
  tags: number,
  error: string | null,
  errorAt: string | undefined,
): RepositoryReport {
  // A stored error is old news: when it was said, so that it is not taken for this pass's.
  return { name, tags, scanned: false, anomalies: [], error, ...(errorAt !== undefined ? { errorAt } : {}) };
}

function keep<R extends { name: string }>(rows: Map<string, R>, row: R): R {
  const kept = deepFreeze(row);
  rows.set(row.name, kept);
  return kept;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
