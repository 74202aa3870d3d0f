/**
 * The rows of a pass's report a daemon shares between passes (issue 27). A webhook pass for one
 * changed image among 500 reports 500 repositories and 500 policies, 998 of them as the pass
 * before did; the store compares each row with its base's by the digest of its JSON
 * (store/result.ts), and made 1,000 JSON texts and SHA-256 digests a pass to find the two that
 * changed. Here a row equal to the one the last pass reported for the same object is that row,
 * the same frozen object, so its digest is made once (the store keeps the digest of a frozen
 * row for as long as the row lives).
 *
 * Only a daemon holds one (through its OutcomeCache); `pawl run` makes fresh rows every time.
 */
import type { Config } from '../config/index.js';
import type { PolicyReport, RepositoryReport } from '../records/index.js';

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

  /** `row`, or the row kept for its repository when that one is equal to it. */
  repository(row: RepositoryReport): RepositoryReport {
    return share(this.#repositories, row);
  }

  /** `row`, or the row kept for its policy when that one is equal to it. */
  policy(row: PolicyReport): PolicyReport {
    return share(this.#policies, row);
  }
}

function share<R extends { name: string }>(rows: Map<string, R>, row: R): R {
  const was = rows.get(row.name);
  if (was !== undefined && sameRow(was, row)) return was;
  const kept = deepFreeze(row);
  rows.set(row.name, kept);
  return kept;
}

/**
 * The same keys in the same order, and the same values: `===` for scalars, the same JSON for the
 * rest (an anomaly list, a failed verification). Key order counts because the store digests the
 * row's JSON text.
 */
function sameRow(a: object, b: object): boolean {
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (let i = 0; i < ka.length; i++) {
    const k = ka[i]!;
    if (k !== kb[i]) return false;
    const x: unknown = (a as Record<string, unknown>)[k];
    const y: unknown = (b as Record<string, unknown>)[k];
    if (x === y) continue;
    if (typeof x !== 'object' || typeof y !== 'object' || x === null || y === null) return false;
    if (JSON.stringify(x) !== JSON.stringify(y)) return false;
  }
  return true;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
