/**
 * Carried decisions (docs/store.md, "Carried decisions"): a run whose decisions mostly repeat an
 * earlier run's writes only the rows that differ, and points at that run (its *base*) for the
 * rest. The daemon's webhook pass decides every marker of a 500-image tree and 499 of them as the
 * pass before; it wrote 500 rows and a 220 KB result a pass. Every reader goes through
 * `Store.decisions` and `Store.getRun`, which answer exactly what the rows of every decision would:
 * the same records, the same ids, the same order.
 *
 * How a carried run is laid out (columns of `runs`, SQLite 9 / PostgreSQL 7):
 * - `decisions_count` n: how many decisions the run has (set on every base and carried run);
 * - `decisions_first` f: its decisions' ids are f … f+n−1, reserved as one block when it is
 *   written, so they order among other runs' decisions as inserted rows would;
 * - `decisions_base` b: the run it carries from, always a run whose rows are all its own;
 * - `decisions_excluded`: the positions of b's rows (0-based, in id order) this run does not repeat.
 * Its own rows are stored with their ids (position = id − f); every other position, in order, is
 * the next of b's rows not excluded. Positional, so reading needs no rule about which decisions
 * are "the same marker": only the writer compares, and it carries only what reads back equal.
 */
import type { Decision, DecisionRecord, RunKind } from '../records/index.js';
import { RuntimeError, smallHash } from '../util/index.js';
import {
  ADVICE,
  beyondLimit,
  carryLimit,
  keptLists,
  needsBase,
  needsDecisions,
  resultFromStore,
  resultToStore,
} from './result.js';
import { FirstPositions } from './positions.js';
import type { KeptList } from './result.js';
import type { DecisionRow, RunRow } from './rows.js';
import { DECISION_FIELDS, decisionOf, parseJson, toDecision, toRun } from './rows.js';
import type { DecisionFilter, RunRecord, StoreWrite } from './types.js';

export { carryLimit };

/**
 * Which marker a decision is about, as a small integer (smallHash): a base keeps one for each
 * of its decisions, and the text of five fields was ~1 KB a decision of a daemon's heap at
 * 10,000 markers (issue 27). A position found by it is used only when `same` says every field
 * is equal, so two markers that share one cost a row written as the run's own.
 */
const keyOf = (d: Decision): number => smallHash(d.automation, d.file, d.line, d.setter, d.policy);
const same = (a: Decision, b: Decision): boolean => DECISION_FIELDS.every((k) => a[k] === b[k]);

/**
 * How a run's decisions are written. `whole`: the batch holds every decision of the run and its
 * end (none was written before), so the run's row records its count, and its result may leave
 * out the rows its decisions hold (result.ts); a whole run that is not carried becomes a base.
 */
export type DecisionPlan =
  | { carried: false; whole: boolean }
  | {
      carried: true;
      whole: true;
      base: number;
      own: { pos: number; decision: Decision }[];
      excluded: number[];
    };

/** What `finishRun` records of the run's decisions, beside its end and result. */
export interface DecisionColumns {
  base: number | null;
  first: number | null;
  count: number | null;
  excluded: string | null;
}

const NONE: DecisionColumns = { base: null, first: null, count: null, excluded: null };

interface Base {
  run: number;
  decisions: readonly Decision[];
  positions: FirstPositions;
  /** Its result's lists (result.ts), for a carried run's result. */
  lists: Map<string, KeptList>;
}

/** Whether `batch` may hold a whole run: its decisions and its end, for the same run. */
export const mayBeWhole = (batch: StoreWrite): boolean =>
  (batch.decisions?.decisions.length ?? 0) > 0 && batch.finishRun?.runId === batch.decisions!.runId;

/**
 * The writer's side: the last base this store wrote for each set of automations (a daemon's job
 * is one automation), so a later run of the same automations can carry from it. A base's rows
 * never change. Those this process wrote are known without reading them; for a set of
 * automations it has not written yet, the backend looks once for the newest base of theirs in the
 * store (`lookUp`, `storedBase`): a one-shot `pawl run` then carries from the run of
 * the process before it, as a daemon's passes carry from each other.
 */
export class DecisionCarrier {
  readonly #bases = new Map<string, Base>();
  /** The sets of automations already looked for in the store. */
  readonly #looked = new Set<string>();

  /**
   * Before `batch` is written: when it may be a whole run of automations this carrier has no base
   * of and has not looked for yet, the newest base of theirs in the store (`storedBase`), learnt.
   */
  async lookUp(batch: StoreWrite, src: BaseSource, reader: CarriedReader): Promise<void> {
    const lineage = this.#unknown(batch);
    if (lineage === null) return;
    const base = await storedBase(lineage, src, reader);
    if (base) this.#learn(lineage, base);
  }

  /**
   * The automations of `batch` (its lineage) when it may be a whole run of automations this
   * carrier has no base of and has not looked for in the store; null otherwise.
   */
  #unknown(batch: StoreWrite): string | null {
    if (!mayBeWhole(batch)) return null;
    const lineage = lineageOf(batch.decisions!.decisions);
    if (this.#bases.has(lineage) || this.#looked.has(lineage)) return null;
    this.#looked.add(lineage);
    return lineage;
  }

  /** A base of `lineage` read from the store (`storedBase`). */
  #learn(lineage: string, base: StoredBase): void {
    if (this.#bases.has(lineage) || lineageOf(base.decisions) !== lineage) return;
    const ds = base.decisions;
    this.#bases.set(lineage, {
      run: base.run,
      decisions: ds,
      positions: new FirstPositions(ds.length, (i) => keyOf(ds[i]!)),
      lists: this.#shared(keptLists(base.result)),
    });
  }

  /**
   * `lists`, each replaced by another base's equal list where there is one. Automations without a
   * policy selector report the same policies and repositories: at 10,000 images ten of them kept
   * ten copies of two lists of 10,000 digests, ~8 MB of a daemon's heap (issue 27). Equal digests
   * are equal entries, so a carried run reads the same from either.
   */
  #shared(lists: Map<string, KeptList>): Map<string, KeptList> {
    for (const [k, list] of lists)
      for (const other of this.#bases.values()) {
        const same = other.lists.get(k);
        if (same !== undefined && same !== list && same.digests === list.digests) {
          lists.set(k, same);
          break;
        }
      }
    return lists;
  }

  /**
   * How `batch`'s decisions are to be written. `earlier`: the run has stored decisions already
   * (asked by the backend only when `mayBeWhole`); such a run is never whole.
   */
  plan(batch: StoreWrite, earlier: boolean): DecisionPlan {
    if (!mayBeWhole(batch) || earlier) return { carried: false, whole: false };
    const ds = batch.decisions!.decisions;
    const base = this.#bases.get(lineageOf(ds));
    if (!base) return { carried: false, whole: true };
    const own: { pos: number; decision: Decision }[] = [];
    const carried = new Set<number>();
    let last = -1;
    for (let pos = 0; pos < ds.length; pos++) {
      const d = ds[pos]!;
      const p = base.positions.get(keyOf(d));
      // Carried rows keep the base's order: a row out of it is written as the run's own.
      if (p !== undefined && p > last && same(base.decisions[p]!, d)) {
        carried.add(p);
        last = p;
      } else own.push({ pos, decision: d });
    }
    const excluded: number[] = [];
    for (let p = 0; p < base.decisions.length; p++) if (!carried.has(p)) excluded.push(p);
    if (beyondLimit(own.length, excluded.length, ds.length)) return { carried: false, whole: true };
    return { carried: true, whole: true, base: base.run, own, excluded };
  }

  /** What the run's row records, once its decisions are written by `plan` (ids from `first`). */
  columns(plan: DecisionPlan, batch: StoreWrite, first: number | null): DecisionColumns {
    const n = batch.decisions?.decisions.length ?? 0;
    if (plan.carried) return { base: plan.base, first, count: n, excluded: JSON.stringify(plan.excluded) };
    // A whole run: a base for the next (its count lets readers check its rows).
    return plan.whole ? { ...NONE, count: n } : NONE;
  }

  /** The run's result as stored (result.ts): what its decisions and its base hold, left out. */
  result(plan: DecisionPlan, batch: StoreWrite): unknown {
    const result = batch.finishRun?.result;
    if (!plan.whole) return result;
    const lists = plan.carried ? this.#bases.get(lineageOf(batch.decisions!.decisions))?.lists : undefined;
    return resultToStore(result, batch.decisions!.decisions, lists);
  }

  /** After the batch is written: a whole run not carried is the next base of its automations. */
  written(plan: DecisionPlan, batch: StoreWrite): void {
    if (plan.carried || !plan.whole) return;
    const ds = batch.decisions!.decisions;
    this.#bases.set(lineageOf(ds), {
      run: batch.decisions!.runId,
      decisions: [...ds],
      positions: new FirstPositions(ds.length, (i) => keyOf(ds[i]!)),
      lists: this.#shared(keptLists(batch.finishRun!.result)),
    });
  }

  /** Forgets every base: writes this process believed stored may not be (a failed commit). */
  clear(): void {
    this.#bases.clear();
    this.#looked.clear();
  }
}

function lineageOf(ds: readonly Decision[]): string {
  return lineageOfNames(ds.map((d) => d.automation));
}

/** A set of automations as one key: their names, each once, sorted. */
function lineageOfNames(names: readonly string[]): string {
  return [...new Set(names)].sort().join('\n');
}

/** A base as read from the store: its run, its decisions in id order, its result as written. */
export interface StoredBase {
  run: number;
  decisions: Decision[];
  result: unknown;
}

/** What a backend answers for `storedBase`, beside its `CarriedReader`. */
export interface BaseSource {
  /** The bases of the newest runs that have decisions (themselves, or the run each carries from), newest first. */
  recentBases(): Promise<number[]>;
  /** The automations a run's stored rows decide, sorted or not. */
  automations(runId: number): Promise<string[]>;
  /** The run's row (null when there is none). */
  runRow(runId: number): Promise<(RunRow & CarriedRunRow) | null>;
}

/**
 * The newest base in the store whose decisions are of exactly these automations (a lineage),
 * with its rows and its result as they were written; null when none of the newest runs' is. A
 * run that does not add up (changed by hand) is passed over: the run then is written whole.
 */
async function storedBase(
  lineage: string,
  src: BaseSource,
  reader: CarriedReader,
): Promise<StoredBase | null> {
  for (const id of await src.recentBases()) {
    if (lineageOfNames(await src.automations(id)) !== lineage) continue;
    const row = await src.runRow(id);
    if (row === null || row.decisions_base !== null || row.decisions_count === null) continue;
    const rows = await reader.runRows(row);
    if (rows.length !== row.decisions_count) continue;
    const decisions = rows.map(decisionOf);
    let result: unknown;
    try {
      result = (await reader.run(row)).result;
    } catch (err) {
      // Its result does not add up: passed over as its rows would be.
      if (err instanceof RuntimeError) continue;
      throw err;
    }
    return { run: id, decisions, result };
  }
  return null;
}

/** A `runs` row as the readers of carried runs need it. */
export interface CarriedRunRow {
  id: number;
  at: number;
  kind: RunKind;
  decisions_base: number | null;
  decisions_first: number | null;
  decisions_count: number | null;
  decisions_excluded: string | null;
}

/** What a backend answers for `readDecisions`. */
export interface CarriedSource {
  /** Today's query over stored rows: `filter`'s policy and run, newest first, at most `limit`. */
  rows(policy: string | null, runId: number | null, limit: number): Promise<DecisionRow[]>;
  /** The runs row (null when there is none). */
  run(runId: number): Promise<CarriedRunRow | null>;
  /**
   * Carried runs whose block starts below `below` (null: any), newest block first, at most
   * `limit`; with `policy`, only those whose base has a decision of it.
   */
  carriedRuns(below: number | null, limit: number, policy: string | null): Promise<CarriedRunRow[]>;
  /** Every stored row of these runs, oldest first. */
  rowsOfRuns(runIds: readonly number[]): Promise<DecisionRow[]>;
  /** A run's stored result (its JSON text; null when none or no run). */
  result(runId: number): Promise<string | null>;
}

/** Carried runs read at a time, newest first, while a `decisions` read fills its limit. */
const CHUNK = 64;
/** Bases kept by a reader (their rows never change): a daemon's automations each have one. */
const BASES_KEPT = 16;

/**
 * The reader's side, one per store: `decisions(filter)` over stored and carried rows alike, and
 * the rows of any run. Bases' rows are kept (immutable); carried runs are read each time.
 */
export class CarriedReader {
  readonly #bases = new Map<number, DecisionRow[]>();
  /**
   * Bases' results, held weakly. Each is a row of every repository and policy (~2 MB at 10,000
   * images), and the API and the dashboard read runs often: held strongly, ten of them put back
   * what the daemon no longer keeps of its last passes (issue 27). One collected is read again.
   */
  readonly #baseResults = new Map<number, WeakRef<object>>();

  constructor(private readonly src: CarriedSource) {}

  async decisions(filter: DecisionFilter, limit: number): Promise<DecisionRecord[]> {
    const policy = filter.policy ?? null;
    if (filter.runId !== undefined) {
      const run = await this.src.run(filter.runId);
      if (run === null || run.decisions_base === null)
        return (await this.src.rows(policy, filter.runId, limit)).map(toDecision);
      const rows = (await this.runRows(run))
        .filter((r) => policy === null || r.policy === policy)
        .reverse()
        .slice(0, limit);
      return rows.map(toDecision);
    }
    // Every stored row of the answer is among the newest `limit` stored rows; the rest are carried
    // rows of runs whose blocks end above the answer's last id, read newest block first.
    const merged = await this.src.rows(policy, null, limit);
    const kth = (): number => (merged.length < limit ? -Infinity : merged[limit - 1]!.id);
    let below: number | null = null;
    for (;;) {
      const runs = await this.src.carriedRuns(below, CHUNK, policy);
      if (runs.length === 0) break;
      const live = runs.filter((r) => r.decisions_first! + r.decisions_count! - 1 > kth());
      if (live.length === 0) break;
      const own = await this.src.rowsOfRuns(live.map((r) => r.id));
      let stop = false;
      for (const run of live) {
        if (run.decisions_first! + run.decisions_count! - 1 < kth()) {
          stop = true;
          break;
        }
        const carried = (
          await this.#assemble(
            run,
            own.filter((r) => r.run_id === run.id),
          )
        ).filter((r) => r.carried && (policy === null || r.row.policy === policy));
        if (carried.length === 0) continue;
        merged.push(...carried.map((r) => r.row));
        merged.sort((a, b) => b.id - a.id);
        merged.length = Math.min(merged.length, limit);
      }
      if (stop || runs.length < CHUNK) break;
      below = runs[runs.length - 1]!.decisions_first!;
    }
    return merged.map(toDecision);
  }

  /** `getRun`'s answer from the run's row: its result as it was written. */
  async run(row: RunRow & CarriedRunRow): Promise<RunRecord> {
    const run = toRun(row);
    const decisions = needsDecisions(run.result);
    // A result carried without a base does not add up: resultFromStore says so.
    const base = needsBase(run.result);
    if (decisions || base)
      run.result = resultFromStore(
        run.result,
        decisions ? await this.runRows(row) : [],
        base && row.decisions_base !== null ? await this.#baseResult(row.decisions_base) : null,
        `the store's run ${row.id}`,
      );
    return run;
  }

  async #baseResult(baseId: number): Promise<unknown> {
    const kept = this.#baseResults.get(baseId)?.deref();
    if (kept !== undefined) return kept;
    const result = parseJson<unknown>(await this.src.result(baseId), null);
    if (typeof result !== 'object' || result === null) return result;
    this.#baseResults.delete(baseId);
    if (this.#baseResults.size >= BASES_KEPT)
      this.#baseResults.delete(this.#baseResults.keys().next().value!);
    this.#baseResults.set(baseId, new WeakRef(result));
    return result;
  }

  /** Every decision of `run`, oldest first, carried ones as their rows would be. */
  async runRows(run: CarriedRunRow): Promise<DecisionRow[]> {
    if (run.decisions_base === null) return this.src.rowsOfRuns([run.id]);
    return (await this.#assemble(run, await this.src.rowsOfRuns([run.id]))).map((r) => r.row);
  }

  async #assemble(run: CarriedRunRow, own: DecisionRow[]): Promise<{ row: DecisionRow; carried: boolean }[]> {
    const first = run.decisions_first!;
    const count = run.decisions_count!;
    const base = await this.#base(run.decisions_base!, run.id);
    const excluded = new Set(parseJson<number[]>(run.decisions_excluded, []));
    const repeated = base.filter((_, i) => !excluded.has(i));
    const byPos = new Map(own.map((r) => [r.id - first, r]));
    if (own.some((r) => r.id < first || r.id >= first + count) || repeated.length !== count - byPos.size)
      throw new RuntimeError(
        `the store's run ${run.id} does not add up: ${own.length} decisions of its own and ${repeated.length} carried from run ${run.decisions_base}, for ${count}; ${ADVICE}`,
      );
    const out: { row: DecisionRow; carried: boolean }[] = [];
    let j = 0;
    for (let pos = 0; pos < count; pos++) {
      const mine = byPos.get(pos);
      if (mine) out.push({ row: mine, carried: false });
      else {
        const b = repeated[j++]!;
        out.push({
          row: { ...b, id: first + pos, run_id: run.id, run_at: run.at, run_kind: run.kind },
          carried: true,
        });
      }
    }
    return out;
  }

  async #base(baseId: number, runId: number): Promise<DecisionRow[]> {
    const kept = this.#bases.get(baseId);
    if (kept) return kept;
    const [run, rows] = await Promise.all([this.src.run(baseId), this.src.rowsOfRuns([baseId])]);
    if (run === null || run.decisions_base !== null || run.decisions_count !== rows.length)
      throw new RuntimeError(
        `the store's run ${runId} carries decisions from run ${baseId}, which ${run === null ? 'is gone' : `holds ${rows.length} of ${run.decisions_count ?? '?'}`}; ${ADVICE}`,
      );
    if (this.#bases.size >= BASES_KEPT) this.#bases.delete(this.#bases.keys().next().value!);
    this.#bases.set(baseId, rows);
    return rows;
  }
}
