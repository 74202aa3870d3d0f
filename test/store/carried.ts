/**
 * Carried decisions (src/store/carry.ts, docs/store.md "Carried decisions"), for both backends:
 * a sequence of passes read back through `decisions` and `getRun` exactly as a store that writes
 * every row reads (a model of the schema before: ids handed out one a row, in order, the result
 * as written); the rows a pass writes; a store from before the change, upgraded.
 */
import assert from 'node:assert/strict';
import type { Decision, DecisionRecord, RunKind } from '../../src/records/index.js';
import type { DecisionFilter, RunRecord, Store, StoreWrite } from '../../src/store/index.js';
import { at } from './contract.js';

/** Marker `i` of automation `auto` at `version` (its file, line and policy fixed by `i`). */
export function marker(auto: string, i: number, version = 1, action: 'write' | 'keep' = 'keep'): Decision {
  return {
    automation: auto,
    file: `apps/app-${i}.yaml`,
    line: 9,
    setter: `flux-system:app-${i}`,
    policy: `flux-system/app-${i}`,
    current: `r.example/app-${i}:1.${version}.0`,
    candidate: action === 'write' ? `r.example/app-${i}:1.${version + 1}.0` : `1.${version}.0`,
    reason: action === 'write' ? 'upgrade' : 'up-to-date',
    detail:
      action === 'write'
        ? `upgrade 1.${version}.0 → 1.${version + 1}.0: newer under the policy`
        : `1.${version}.0 is the policy's candidate`,
    action,
  };
}

/** A pass's result as `runPass` reports it: each automation's rows are its decisions' projections. */
export function reportOf(ds: readonly Decision[], extra: Record<string, unknown> = {}): unknown {
  const names = [...new Set(ds.map((d) => d.automation))];
  return {
    repositories: ds.map((d) => ({ name: d.policy, tags: 3, scanned: false, anomalies: [], error: null })),
    policies: ds.map((d) => ({
      name: d.policy,
      candidate: d.candidate,
      highWater: d.candidate,
      error: null,
    })),
    automations: names.map((name) => {
      const mine = ds.filter((d) => d.automation === name);
      return {
        name,
        result: mine.some((d) => d.action === 'write') ? 'pushed' : 'up-to-date',
        commit: mine.some((d) => d.action === 'write') ? 'abc123' : null,
        branch: null,
        changes: mine
          .filter((d) => d.action === 'write')
          .map(({ file, line, setter, policy, current, candidate, reason }) => ({
            file,
            line,
            setter,
            policy,
            old: current,
            new: candidate ?? '',
            reason,
          })),
        kept: mine
          .filter((d) => d.action === 'keep')
          .map(({ file, line, setter, policy, current, candidate, reason, detail }) => ({
            file,
            line,
            setter,
            policy,
            current,
            candidate,
            reason,
            detail,
          })),
        error: null,
        ...extra,
      };
    }),
  };
}

/**
 * What the schema before carried decisions stores and answers: every decision a row, ids one
 * after another in the order written, runs' results as written.
 */
export class Model {
  readonly rows: DecisionRecord[] = [];
  readonly runs = new Map<number, RunRecord>();
  constructor(public nextId: number) {}

  begin(id: number, kind: RunKind, minute: number): void {
    this.runs.set(id, { id, at: at(minute), kind, endedAt: null, result: null });
  }

  write(batch: StoreWrite): void {
    if (batch.decisions) {
      const run = this.runs.get(batch.decisions.runId)!;
      for (const d of batch.decisions.decisions)
        this.rows.push({ ...d, id: this.nextId++, runId: run.id, runKind: run.kind, at: run.at });
    }
    if (batch.finishRun) {
      const run = this.runs.get(batch.finishRun.runId)!;
      this.runs.set(run.id, {
        ...run,
        endedAt: batch.finishRun.endedAt,
        result: JSON.parse(JSON.stringify(batch.finishRun.result ?? null)) as unknown,
      });
    }
  }

  decisions(f: DecisionFilter): DecisionRecord[] {
    return this.rows
      .filter(
        (d) =>
          (f.policy === undefined || d.policy === f.policy) && (f.runId === undefined || d.runId === f.runId),
      )
      .sort((a, b) => b.id - a.id)
      .slice(0, f.limit ?? 100);
  }
}

/**
 * Two runs as pawl wrote them before carried decisions (SQLite 8, PostgreSQL 6): every decision a
 * row, the result whole. Literal statements, the same on both backends; `seed` tells the model.
 */
export function legacyRuns(): { sql: string[]; seed: (m: Model) => void } {
  const first = [0, 1, 2].map((i) => marker('flux-system/fleet', i, 1, i === 1 ? 'write' : 'keep'));
  const second = [marker('flux-system/fleet', 0), marker('flux-system/fleet', 1, 2)];
  const q = (v: string | number | null) =>
    v === null ? 'NULL' : typeof v === 'number' ? `${v}` : `'${v.replaceAll("'", "''")}'`;
  const rows = [...first.map((d) => [1, d] as const), ...second.map((d) => [2, d] as const)];
  const runs: [number, RunKind, number, Decision[]][] = [
    [1, 'run', 0, first],
    [2, 'dry-run', 2, second],
  ];
  return {
    sql: [
      `INSERT INTO runs (id, at, kind, ended_at, result) VALUES ${runs
        .map(
          ([id, kind, m, ds]) =>
            `(${id}, ${at(m).getTime()}, '${kind}', ${at(m + 1).getTime()}, ${q(JSON.stringify(reportOf(ds)))})`,
        )
        .join(', ')}`,
      `INSERT INTO decisions (id, run_id, automation, file, line, setter, policy, current, candidate, reason, detail, action) VALUES ${rows
        .map(
          ([run, d], i) =>
            `(${i + 1}, ${run}, ${[d.automation, d.file, d.line, d.setter, d.policy, d.current, d.candidate, d.reason, d.detail, d.action].map(q).join(', ')})`,
        )
        .join(', ')}`,
    ],
    seed: (m) => {
      for (const [id, kind, minute, ds] of runs) {
        m.begin(id, kind, minute);
        m.write({
          decisions: { runId: id, decisions: ds },
          finishRun: { runId: id, result: reportOf(ds), endedAt: at(minute + 1) },
        });
      }
    },
  };
}

/**
 * A sequence of passes of two automations, every reader's answer compared with the model's.
 * `legacy`: the store holds `legacyRuns()` (upgraded in place): they read as they did, and
 * the passes after them carry as on a new store. `reopen`: each pass is written by a store
 * opened anew (closing the one before), as one-shot `pawl run`s are; returns the last store.
 */
export async function checkCarriedSequence(
  s: Store,
  legacy = false,
  reopen?: (s: Store) => Promise<Store>,
): Promise<Store> {
  const model = new Model(1);
  const runs: number[] = [];
  if (legacy) {
    legacyRuns().seed(model);
    runs.push(...model.runs.keys());
  }
  const A = 'flux-system/fleet';
  const B = 'flux-system/other';
  let minute = 5;
  /** One run: its decisions and its end in one batch (as runPass writes), or in two (`split`). */
  const pass = async (
    kind: RunKind,
    ds: Decision[],
    opts: { split?: boolean; unfinished?: boolean; result?: unknown } = {},
  ): Promise<void> => {
    minute += 5;
    if (reopen) s = await reopen(s);
    const id = await s.beginRun(at(minute), kind);
    model.begin(id, kind, minute);
    runs.push(id);
    const finishRun = { runId: id, result: opts.result ?? reportOf(ds), endedAt: at(minute + 1) };
    const batches: StoreWrite[] = opts.unfinished
      ? [{ decisions: { runId: id, decisions: ds } }]
      : opts.split
        ? [{ decisions: { runId: id, decisions: ds } }, { finishRun }]
        : [{ decisions: { runId: id, decisions: ds }, finishRun }];
    for (const b of batches) {
      await s.write(b);
      model.write(b);
    }
    await compare(`after run ${id} (${kind}, ${ds.length} decisions)`);
  };
  const compare = async (when: string): Promise<void> => {
    const filters: DecisionFilter[] = [
      {},
      { limit: 1 },
      { limit: 7 },
      { limit: 45 },
      { limit: 10_000 },
      { policy: 'flux-system/app-3' },
      { policy: 'flux-system/app-3', limit: 2 },
      { policy: 'flux-system/app-31', limit: 3 },
      { policy: 'flux-system/none' },
      ...runs.flatMap((runId) => [{ runId }, { runId, limit: 3 }, { runId, policy: 'flux-system/app-3' }]),
      { runId: 999_999 },
    ];
    for (const f of filters)
      assert.deepEqual(await s.decisions(f), model.decisions(f), `${when}: decisions(${JSON.stringify(f)})`);
    for (const id of runs) assert.deepEqual(await s.getRun(id), model.runs.get(id), `${when}: getRun(${id})`);
  };

  if (legacy) await compare('the upgraded store, before any pass');
  const fleet = (v: (i: number) => Decision | null): Decision[] =>
    Array.from({ length: 30 }, (_, i) => v(i)).filter((d): d is Decision => d !== null);
  let cur = fleet((i) => marker(A, i));
  await pass('run', cur); // the first: every row
  await pass('run', cur); // nothing changed
  cur = cur.map((d, i) => (i === 3 ? marker(A, 3, 1, 'write') : d));
  await pass('run', cur); // one write
  cur = cur.map((d, i) => (i === 3 ? marker(A, 3, 2) : i === 7 ? marker(A, 7, 1, 'write') : d));
  await pass('dry-run', cur); // a dry run of the same automation, two rows differ
  await pass('run', [...cur.filter((_, i) => i !== 10), marker(A, 31)]); // one marker gone, one new
  await pass('run', [marker(B, 40), marker(B, 41, 1, 'write'), marker(B, 42)]); // another automation
  await pass('run', [...cur, marker(B, 40)]); // both in one run
  await pass('rollback', [marker(A, 3, 5, 'write')], { split: true }); // end written apart
  await pass('run', [cur[1]!, cur[0]!, ...cur.slice(2)]); // two rows swap places
  await pass('run', [cur[0]!, ...cur]); // one marker twice
  await pass('run', cur, { unfinished: true }); // a failed pass: decisions, no end
  await pass('run', cur, { result: { automations: [{ name: A, changes: [], kept: 'not rows' }] } });
  await pass('run', cur, { result: reportOf(cur.slice(1)) }); // rows that are not the decisions'
  cur = fleet((i) => marker(A, i, 3));
  await pass('run', cur); // everything changed: a new base
  await pass('run', cur);
  cur = cur.map((d, i) => (i === 20 ? marker(A, 20, 3, 'write') : d));
  await pass('run', cur);
  await pass('run', cur, { result: reportOf(cur, { note: 'extra field kept' }) });
  // One field of one decision at a time: each is a decision that differs.
  for (const field of [
    'file',
    'line',
    'setter',
    'policy',
    'current',
    'candidate',
    'reason',
    'detail',
    'action',
  ] as const) {
    const d = cur[4]!;
    const changed = {
      ...d,
      [field]:
        field === 'line'
          ? d.line + 1
          : field === 'action'
            ? 'write'
            : field === 'candidate'
              ? null
              : `${d[field]}!`,
    };
    await pass(
      'run',
      cur.map((x, i) => (i === 4 ? changed : x)),
    );
  }
  await pass('run', []); // nothing to decide
  await pass('run', cur);
  return s;
}

/**
 * The rows a daemon's passes write, among 10 and 100 markers: the first every row; then an
 * unchanged pass none, a pass with one changed marker one (until the changes since the last
 * whole run pass `carryLimit`, then a whole run again). `written(fn)`: rows inserted, updated or
 * deleted by table; `resultBytes(run)`: the stored result's length. `reopen`: each pass in a
 * store opened anew, as one-shot `pawl run`s are (the same rows: each carries from the store's).
 */
export async function checkCarriedWrites(
  store: Store,
  written: (fn: () => Promise<unknown>) => Promise<Record<string, number>>,
  resultBytes: (runId: number) => Promise<number>,
  reopen?: (s: Store) => Promise<Store>,
): Promise<Store> {
  const bytes: Record<number, number[]> = {};
  /** One whole run of `ds` at `minute` (in a store opened anew, with `reopen`); its id. */
  const run = async (ds: Decision[], minute: number): Promise<number> => {
    if (reopen) store = await reopen(store);
    const id = await store.beginRun(at(minute), 'run');
    await store.write({
      decisions: { runId: id, decisions: ds },
      finishRun: { runId: id, result: reportOf(ds), endedAt: at(minute) },
    });
    return id;
  };
  for (const n of [10, 100]) {
    const auto = `flux-system/fleet-${n}`;
    let minute = 0;
    const pass = (ds: Decision[]) => async () => {
      (bytes[n] ??= []).push(await resultBytes(await run(ds, ++minute)));
    };
    const ds = Array.from({ length: n }, (_, i) => marker(auto, i));
    assert.deepEqual(await written(pass(ds)), { decisions: n, runs: 2 }, `${n}: the first pass`);
    assert.deepEqual(await written(pass(ds)), { runs: 2 }, `${n}: an unchanged pass`);
    const one = ds.map((d, i) => (i === 0 ? marker(auto, 0, 1, 'write') : d));
    assert.deepEqual(await written(pass(one)), { decisions: 1, runs: 2 }, `${n}: one marker changed`);
    assert.deepEqual(await written(pass(one)), { decisions: 1, runs: 2 }, `${n}: the same change again`);
  }
  // Back to the first automations after the others' passes: from their own base, not the newest.
  let minute = 100;
  const again = (ds: Decision[]) => () => run(ds, ++minute);
  const ten = (version: number) =>
    Array.from({ length: 10 }, (_, i) =>
      marker('flux-system/fleet-10', i, version, i === 0 ? 'write' : 'keep'),
    );
  assert.deepEqual(await written(again(ten(1))), { decisions: 1, runs: 2 }, 'fleet-10 after fleet-100');
  // Every marker changed: a new base; the same pass again carries from it, not from the old one.
  assert.deepEqual(await written(again(ten(5))), { decisions: 10, runs: 2 }, 'fleet-10, all changed');
  assert.deepEqual(await written(again(ten(5))), { runs: 2 }, 'fleet-10, from its new base');
  // The stored result of an unchanged pass holds no row per marker: 10 against 100 markers.
  const [small, large] = [bytes[10]!, bytes[100]!];
  assert.ok(large[1]! - small[1]! < (large[0]! - small[0]!) / 2, `result bytes ${JSON.stringify(bytes)}`);
  return store;
}
