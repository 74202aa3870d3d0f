/**
 * The running configuration, whatever its source: what the daemon derives from a read (the
 * registry clients, the Receiver routes, which automations depend on which repositories), the
 * start rule (serve the valid objects; `--strict` refuses), and the reload rule (all or
 * nothing for files, per object for an API server; one at a time).
 */
import { objectsByFile, refKey, selectPolicies } from '../../config/index.js';
import { createScanClients } from '../../scan/index.js';
import { ConfigError, formatProblem, type Logger, type Problem } from '../../util/index.js';
import { countResponses, type ServeMetrics } from '../metrics.js';
import type { Clock } from '../scheduler.js';
import { buildRoutes } from '../webhooks.js';
import type { ConfigRead, ConfigSource, Unreadable } from './types.js';
import type { Config, ImagePolicy, SkippedObject } from '../../config/index.js';
import type { ScanClients } from '../../scan/index.js';
import type { ReceiverRoutes } from '../receivers/index.js';

export interface LoadedConfig {
  config: Config;
  clients: ScanClients;
  routes: ReceiverRoutes;
  /** `ns/name` of a repository → keys of the automations that depend on it. */
  dependents: Map<string, string[]>;
  /** automation `ns/name` → its repositories' `ns/name`. */
  repositoriesOf: Map<string, string[]>;
  loadedAt: Date;
  /** Everything the loader said, warnings and errors. */
  warnings: Problem[];
  /** The errors, with one more per object skipped because it needs an invalid one; empty when valid. */
  errors: Problem[];
  /** The objects left out (invalid, or needing one that is): readiness looks at them. */
  skipped: SkippedObject[];
}

export interface ReloadOutcome {
  applied: boolean;
  reason: string;
  at: Date;
  problems: Problem[];
  added: string[];
  removed: string[];
  changed: string[];
}

/** What a new configuration changed in the daemon's jobs (the scheduler's keys). */
export type Applied = Pick<ReloadOutcome, 'added' | 'removed' | 'changed'>;

/**
 * Why a valid-looking reload must not be taken all the same: it would remove every object the
 * daemon runs, or it reads nothing from a file that held objects and is still there — an empty,
 * truncated or garbage file (a checkout caught half-way, a ConfigMap cut short) would otherwise
 * stop automations in silence. A file deleted on purpose takes its objects with it, unless it
 * was the last one. Empty when the reload may go ahead.
 */
export function shrinkProblems(current: Config, next: Config, holds?: (file: string) => boolean): Problem[] {
  const before = objectsByFile(current);
  const after = objectsByFile(next);
  const had = [...before.values()].reduce((a, b) => a + b, 0);
  if (had > 0 && after.size === 0)
    return [
      {
        location: { file: [...before.keys()].sort().join(', ') },
        severity: 'error',
        message:
          `the configuration now holds no object pawl knows, where the running one has ${had}: refused, ` +
          'since an empty or truncated file would stop every automation. Fix the files; to run nothing, stop pawl serve',
      },
    ];
  const problems: Problem[] = [];
  if (!holds) return problems;
  for (const [file, n] of [...before].sort(([a], [b]) => a.localeCompare(b)))
    if (!after.has(file) && holds(file))
      problems.push({
        location: { file },
        severity: 'error',
        message:
          `this file held ${n} object${n === 1 ? '' : 's'} and now yields none pawl can read: refused ` +
          '(truncated or half-written?). Fix it, or delete it to remove its objects',
      });
  return problems;
}

/** The loader's warnings, then its errors and the objects skipped for needing an invalid one. */
function allProblems(loaded: ConfigRead): Problem[] {
  return [...loaded.warnings.filter((p) => p.severity === 'warning'), ...loaded.errors];
}

/** A read refused for what it lost, or the read itself. */
function shrunk(read: LoadedConfig, problems: Problem[]): LoadedConfig | Unreadable {
  return problems.length > 0 ? { problems: [...problems, ...read.warnings] } : read;
}

export interface ConfigurationDeps {
  log: Logger;
  metrics: ServeMetrics;
}

/** A read, with what the daemon derives from it; unreadable stays so. */
async function derive(source: ConfigSource, deps: ConfigurationDeps): Promise<LoadedConfig | Unreadable> {
  const read = await source.read();
  if ('problems' in read) return read;
  const { config } = read;
  const dependents = new Map<string, string[]>();
  const repositoriesOf = new Map<string, string[]>();
  const nameOf = (p: ImagePolicy): string => refKey(p.spec.imageRepositoryRef);
  for (const a of config.automations.values()) {
    const name = refKey(a.metadata);
    const repos = [...new Set(selectPolicies(config, a).map(nameOf))].sort();
    repositoriesOf.set(name, repos);
    for (const r of repos) {
      const d = dependents.get(r);
      if (d) d.push(name);
      else dependents.set(r, [name]);
    }
  }
  // Repositories used by the same automations share one list: ten automations without a
  // selector gave each of 10,000 repositories its own list of the same ten names (~0.2 KB each,
  // issue 27).
  const lists = new Map<string, string[]>();
  for (const [r, d] of dependents) {
    const key = d.join('\n');
    const same = lists.get(key);
    if (same !== undefined) dependents.set(r, same);
    else {
      const own = d.slice();
      lists.set(key, own);
      dependents.set(r, own);
    }
  }
  return {
    ...read,
    clients: createScanClients(config, {
      log: deps.log,
      extra: { onResponse: countResponses(deps.metrics) },
    }),
    routes: buildRoutes(config, deps.log),
    dependents,
    repositoriesOf,
    loadedAt: new Date(),
  };
}

/**
 * The first read. An invalid object is skipped with what needs it and the rest runs (one bad
 * object must not stop a fleet's automation); with `strict`, or when nothing could be read at
 * all, throws ConfigError (exit 2).
 */
export async function loadFirst(
  source: ConfigSource,
  deps: ConfigurationDeps,
  strict: boolean,
): Promise<LoadedConfig> {
  const loaded = await derive(source, deps);
  if ('problems' in loaded) throw new ConfigError(loaded.problems);
  if (strict && loaded.errors.length > 0) throw new ConfigError(allProblems(loaded));
  return loaded;
}

export interface ConfigurationOptions extends ConfigurationDeps {
  clock: Clock;
  /** Puts a configuration that just became the current one into effect (jobs, alerts). */
  apply: (loaded: LoadedConfig) => Promise<Applied>;
  stopping: () => boolean;
}

export class Configuration {
  #current: LoadedConfig;
  #lastReload: ReloadOutcome;
  #reloading: Promise<unknown> = Promise.resolve();

  constructor(
    readonly source: ConfigSource,
    first: LoadedConfig,
    private readonly opts: ConfigurationOptions,
  ) {
    this.#current = first;
    this.#lastReload = {
      applied: true,
      reason: 'start',
      at: first.loadedAt,
      problems: allProblems(first),
      added: [],
      removed: [],
      changed: [],
    };
  }

  get current(): LoadedConfig {
    return this.#current;
  }

  get lastReload(): ReloadOutcome {
    return this.#lastReload;
  }

  /** Says what the start skipped: every problem, and that the valid objects are served. */
  announceStart(): void {
    const { log, metrics } = this.opts;
    const loaded = this.#current;
    metrics.configErrors.set(loaded.errors.length);
    for (const p of allProblems(loaded)) {
      if (p.severity === 'error') log.error(formatProblem(p));
      else log.warn(formatProblem(p));
    }
    if (loaded.errors.length > 0)
      log.error(
        { problems: loaded.errors.length },
        'invalid objects skipped: serving the valid ones; fix them and the next reload applies (pawl validate names the same)',
      );
  }

  /**
   * Reads the configuration again. A valid one replaces the running one (added objects start,
   * removed ones stop, changed ones get a new schedule); an invalid one is refused with the same
   * file:line problems as `pawl validate`, and the running one stays. One reload at a time.
   */
  reload(reason: string): Promise<ReloadOutcome> {
    const next = this.#reloading.then(() => this.#reloadNow(reason));
    this.#reloading = next.catch(() => undefined);
    return next;
  }

  async #reloadNow(reason: string): Promise<ReloadOutcome> {
    const { log, metrics, clock } = this.opts;
    const at = new Date(clock.now());
    if (this.opts.stopping()) {
      return { applied: false, reason, at, problems: [], added: [], removed: [], changed: [] };
    }
    const read = await derive(this.source, this.opts);
    // Files: all or nothing, unlike the start: a daemon keeps the configuration it runs rather
    // than swapping in one that lost objects; the refusal says what `pawl validate` says.
    // Objects of an API server each stand alone (a deleted one is meant to stop): the valid
    // ones are taken, as at the start, and the others reported (on their status, by the caller).
    const perObject = this.source.perObject === true;
    const loaded =
      'problems' in read || perObject
        ? read
        : read.errors.length > 0
          ? { problems: allProblems(read) }
          : shrunk(
              read,
              shrinkProblems(this.#current.config, read.config, this.source.holds?.bind(this.source)),
            );
    if ('problems' in loaded) {
      for (const p of loaded.problems.filter((x) => x.severity === 'error'))
        log.error({ reload: reason }, formatProblem(p));
      log.error({ reload: reason }, 'configuration refused; the running configuration stays');
      metrics.reloads.inc({ outcome: 'refused' });
      this.#lastReload = {
        applied: false,
        reason,
        at,
        problems: loaded.problems,
        added: [],
        removed: [],
        changed: [],
      };
      return this.#lastReload;
    }
    for (const w of loaded.warnings) log.warn({ reload: reason }, formatProblem(w));
    for (const e of perObject ? loaded.errors : []) log.error({ reload: reason }, formatProblem(e));
    this.#current = loaded;
    const { added, removed, changed } = await this.opts.apply(loaded);
    metrics.reloads.inc({ outcome: 'applied' });
    metrics.configErrors.set(loaded.errors.length);
    log.info(
      {
        reload: reason,
        added,
        removed,
        changed,
        ...(loaded.errors.length > 0 ? { skipped: loaded.skipped.length } : {}),
      },
      'configuration applied',
    );
    this.#lastReload = {
      applied: true,
      reason,
      at,
      problems: perObject ? allProblems(loaded) : loaded.warnings,
      added,
      removed,
      changed,
    };
    return this.#lastReload;
  }
}
