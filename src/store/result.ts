/**
 * A run's stored result without what its decisions and its base already hold (docs/store.md,
 * "Carried decisions"). A pass's result (RunReport) lists each automation's `changes` and `kept`
 * rows, projections of its decisions (at 500 markers ~150 KB of the ~220 KB a pass wrote), and a
 * row of every repository and policy (~70 KB), mostly as the pass before had them.
 * - Where an automation's rows are exactly those projections, the stored result says so
 *   (`"$decisions"` in their place) and `getRun` puts them back from the run's decisions.
 * - A carried run's `repositories` and `policies` are stored as its decisions are: the entries
 *   that differ from its base's, by position, and the positions of the base's it does not repeat.
 * Checked when written (field by field, or each entry's JSON by its digest), so a result shaped
 * any other way (an older report, a failed pass's rows, another caller's JSON) is stored as it is.
 */
import { hash } from 'node:crypto';
import type { Decision } from '../records/index.js';
import { RuntimeError, smallHash } from '../util/index.js';
import { FirstPositions } from './positions.js';

const FROM_DECISIONS = '$decisions';

/** What to do about a stored run that does not add up. */
export const ADVICE = 'the store was changed by hand or by another tool (delete the state to start again)';

const CHANGE_KEYS = ['file', 'line', 'setter', 'policy', 'old', 'new', 'reason'] as const;
const KEPT_KEYS = ['file', 'line', 'setter', 'policy', 'current', 'candidate', 'reason', 'detail'] as const;

/** The report's `changes` row of a write (src/run/report.ts's `changeRow`). */
function changeRow(d: Decision): Record<string, unknown> {
  const { file, line, setter, policy, current, candidate, reason } = d;
  return { file, line, setter, policy, old: current, new: candidate ?? '', reason };
}

/** The report's `kept` row of a keep (src/run/report.ts's `keptRow`). */
function keptRow(d: Decision): Record<string, unknown> {
  const { file, line, setter, policy, current, candidate, reason, detail } = d;
  return { file, line, setter, policy, current, candidate, reason, detail };
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `rows` is exactly `project` of `ds`, keys in the same order. */
function projects(
  rows: unknown,
  ds: readonly Decision[],
  keys: readonly string[],
  project: (d: Decision) => Obj,
): boolean {
  if (!Array.isArray(rows) || rows.length !== ds.length) return false;
  for (let i = 0; i < rows.length; i++) {
    const row: unknown = rows[i];
    if (!isObj(row)) return false;
    const names = Object.keys(row);
    if (names.length !== keys.length || names.some((k, j) => k !== keys[j])) return false;
    const want = project(ds[i]!);
    // Only values JSON and the store give back as they were (no undefined, no objects).
    if (
      keys.some(
        (k) =>
          row[k] !== want[k] ||
          !(typeof want[k] === 'string' || typeof want[k] === 'number' || want[k] === null),
      )
    )
      return false;
  }
  return true;
}

/**
 * The most entries a carried run's decisions or lists may differ from its base's by (its own,
 * and the base's it does not repeat: a changed marker is one of each), for n of them: beyond it
 * the run is written whole and becomes the next base. √(2n) keeps the rows a pass writes,
 * averaged over the passes between two bases, least when one marker changes a pass (~√(2n)).
 */
export const beyondLimit = (own: number, excluded: number, n: number): boolean =>
  Math.max(own, excluded) > carryLimit(n);

export const carryLimit = (n: number): number => Math.max(1, Math.round(Math.sqrt(2 * n)));

/** The top-level lists of a result a carried run stores by difference from its base's. */
export const CARRIED_LISTS = ['repositories', 'policies'] as const;

/**
 * A base's list as the writer keeps it: the digest of each entry's JSON, one after another, and
 * the position of each name, by its smallHash. Digests and small integers, not the JSON and the
 * names: a daemon keeps a base for every automation, and at 10,000 images ten automations'
 * bases held 200,000 entries' JSON, ~180 bytes each, and their names; a digest is 32 bytes
 * (issue 27). An entry is carried only when its JSON's digest is the one at its position in the
 * base, so reading it back from the base gives the same JSON; two names sharing a hash cost an
 * entry stored as the run's own.
 */
export interface KeptList {
  /** The digests as one string of 32 one-byte characters each (latin1): compared in place. */
  digests: string;
  positions: FirstPositions;
}

const DIGEST_CHARS = 32;

/**
 * The digest of a frozen entry, by the entry: a frozen entry cannot change, and a daemon's passes
 * report an unchanged repository or policy as the same frozen row (run/shared-rows.ts), so its
 * JSON is made and hashed once, not once a pass.
 */
const frozenDigests = new WeakMap<object, string>();

function digestOf(e: unknown): string {
  const frozen = typeof e === 'object' && e !== null && Object.isFrozen(e);
  if (frozen) {
    const kept = frozenDigests.get(e);
    if (kept !== undefined) return kept;
  }
  const d = hash('sha256', JSON.stringify(e), 'binary');
  if (frozen) frozenDigests.set(e as object, d);
  return d;
}
const entries = (list: KeptList): number => list.digests.length / DIGEST_CHARS;
/** Whether entry `e` is, as JSON, the base's entry at `p`. */
const sameAt = (list: KeptList, p: number, e: unknown): boolean =>
  list.digests.startsWith(digestOf(e), p * DIGEST_CHARS);

/** A result's lists as a base of later runs keeps them (entries without a string name: none). */
export function keptLists(result: unknown): Map<string, KeptList> {
  const out = new Map<string, KeptList>();
  if (!isObj(result)) return out;
  for (const k of CARRIED_LISTS) {
    const list = result[k];
    if (!Array.isArray(list) || !list.every((e) => isObj(e) && typeof e.name === 'string')) continue;
    const named = list as Obj[];
    out.set(k, {
      digests: named.map(digestOf).join(''),
      positions: new FirstPositions(named.length, (i) => smallHash(named[i]!.name as string)),
    });
  }
  return out;
}

interface StoredList {
  $carried: true;
  /** The entries of the run's own, by position. */
  own: [number, unknown][];
  /** The base's positions not repeated. */
  excluded: number[];
  count: number;
}
const isStoredList = (v: unknown): v is StoredList => isObj(v) && v.$carried === true;

/** `list` against its base's (positional, as carry.ts stores decisions), or null: store it whole. */
function carryList(list: unknown, base: KeptList | undefined): StoredList | null {
  if (!base || !Array.isArray(list)) return null;
  const own: [number, unknown][] = [];
  const carried = new Set<number>();
  let last = -1;
  for (let pos = 0; pos < list.length; pos++) {
    const e: unknown = list[pos];
    const p = isObj(e) && typeof e.name === 'string' ? base.positions.get(smallHash(e.name)) : undefined;
    if (p !== undefined && p > last && sameAt(base, p, e)) {
      carried.add(p);
      last = p;
    } else own.push([pos, e]);
  }
  const excluded: number[] = [];
  for (let p = 0; p < entries(base); p++) if (!carried.has(p)) excluded.push(p);
  if (beyondLimit(own.length, excluded.length, list.length)) return null;
  return { $carried: true, own, excluded, count: list.length };
}

/**
 * The result as stored: each automation's rows that its decisions hold replaced by a mark, and,
 * for a carried run, its lists by difference from its base's (`base`, kept by the writer).
 */
export function resultToStore(
  result: unknown,
  decisions: readonly Decision[],
  base?: ReadonlyMap<string, KeptList>,
): unknown {
  if (!isObj(result)) return result;
  let out: Obj = result;
  for (const k of CARRIED_LISTS) {
    const carried = carryList(result[k], base?.get(k));
    if (carried) out = { ...out, [k]: carried };
  }
  if (!Array.isArray(result.automations) || decisions.length === 0) return out;
  let changed = false;
  const automations = result.automations.map((a: unknown) => {
    if (!isObj(a) || typeof a.name !== 'string') return a;
    const mine = decisions.filter((d) => d.automation === a.name);
    const writes = mine.filter((d) => d.action === 'write');
    const keeps = mine.filter((d) => d.action === 'keep');
    if (
      writes.length + keeps.length === 0 ||
      !projects(a.changes, writes, CHANGE_KEYS, changeRow) ||
      !projects(a.kept, keeps, KEPT_KEYS, keptRow)
    )
      return a;
    changed = true;
    return { ...a, changes: FROM_DECISIONS, kept: FROM_DECISIONS };
  });
  return changed ? { ...out, automations } : out;
}

/** Whether a stored result needs its run's decisions to be read back. */
export function needsDecisions(stored: unknown): boolean {
  return (
    isObj(stored) &&
    Array.isArray(stored.automations) &&
    stored.automations.some((a: unknown) => isObj(a) && a.kept === FROM_DECISIONS)
  );
}

/** Whether a stored result needs its base's result to be read back. */
export const needsBase = (stored: unknown): boolean =>
  isObj(stored) && CARRIED_LISTS.some((k) => isStoredList(stored[k]));

/**
 * The result as it was written, from the stored one, the run's decisions (oldest first; read
 * when `needsDecisions`) and its base's stored result (when `needsBase`).
 */
export function resultFromStore(
  stored: unknown,
  decisions: readonly Decision[],
  base: unknown,
  where: string,
): unknown {
  if (!isObj(stored)) return stored;
  let s: Obj = stored;
  for (const k of CARRIED_LISTS) {
    const v = stored[k];
    if (!isStoredList(v)) continue;
    const from = isObj(base) ? base[k] : undefined;
    if (!Array.isArray(from))
      throw new RuntimeError(`${where}: its ${k} are carried from a run that has none; ${ADVICE}`);
    const excluded = new Set(v.excluded);
    const repeated = from.filter((_, i) => !excluded.has(i));
    const byPos = new Map(v.own);
    if (repeated.length !== v.count - byPos.size)
      throw new RuntimeError(
        `${where}: its ${k} do not add up (${byPos.size} of its own and ${repeated.length} carried, for ${v.count}); ${ADVICE}`,
      );
    let j = 0;
    s = {
      ...s,
      [k]: Array.from({ length: v.count }, (_, pos) => (byPos.has(pos) ? byPos.get(pos) : repeated[j++])),
    };
  }
  if (!needsDecisions(s)) return s;
  const r = s as Obj & { automations: unknown[] };
  return {
    ...r,
    automations: r.automations.map((a) => {
      if (!isObj(a) || a.kept !== FROM_DECISIONS) return a;
      const mine = decisions.filter((d) => d.automation === a.name);
      return {
        ...a,
        changes: mine.filter((d) => d.action === 'write').map(changeRow),
        kept: mine.filter((d) => d.action === 'keep').map(keptRow),
      };
    }),
  };
}
