/** A batch of writes on SQLite (`Store.write`), one statement a record, inside one savepoint. */
import type Database from 'better-sqlite3';
import { mayBeWhole, type DecisionCarrier } from '../carry.js';
import { decisionValues, ms, pendingJson } from '../rows.js';
import type { StoreWrite } from '../types.js';
import { SQL } from './sql.js';

/**
 * Applies `batch` in the order `StoreWrite` names; the caller holds the transaction, and calls the
 * returned function once it is written (the carrier's next base, ../carry.ts). Each kind's
 * statement is looked up once a batch, not once a row: a daemon's pass writes hundreds of rows.
 */
export function writeBatch(db: Database.Database, batch: StoreWrite, carrier: DecisionCarrier): () => void {
  const once = <K extends keyof typeof SQL>(k: K) => {
    let st: Database.Statement | undefined;
    return () => (st ??= db.prepare(SQL[k]));
  };
  const setTagDigest = once('setTagDigest');
  const setPolicyState = once('setPolicyState');
  const recordSelection = once('recordSelection');
  const moveSelectionHead = once('moveSelectionHead');
  const recordDecision = once('recordDecision');
  const recordEvent = once('recordEvent');
  for (const d of batch.tagDigests ?? []) setTagDigest().run(d.repository, d.tag, d.digest, ms(d.at));
  for (const { policy, state } of batch.policyStates ?? [])
    setPolicyState().run(
      policy,
      state.specHash,
      state.highWater,
      state.highWaterAt ? ms(state.highWaterAt) : null,
      pendingJson(state),
    );
  for (const s of batch.selections ?? []) {
    const { lastInsertRowid } = recordSelection().run(
      s.policy,
      ms(s.at),
      s.candidate,
      s.error,
      s.unverified ? JSON.stringify(s.unverified) : null,
      s.policy,
    );
    moveSelectionHead().run(s.policy, lastInsertRowid);
  }
  const runId = batch.decisions?.runId;
  const earlier = mayBeWhole(batch) && db.prepare(SQL.hasDecisions).pluck().get(runId) !== undefined;
  const plan = carrier.plan(batch, earlier);
  let first: number | null = null;
  if (plan.carried) {
    // The run's ids as one block, after every id handed out: only the rows that differ are stored.
    first = ((db.prepare(SQL.decisionSeq).pluck().get() as number | undefined) ?? 0) + 1;
    const at = once('recordDecisionAt');
    for (const { pos, decision: d } of plan.own) at().run(first + pos, runId, ...decisionValues(d));
    db.prepare(SQL.reserveDecisions).run(first + batch.decisions!.decisions.length - 1);
  } else for (const d of batch.decisions?.decisions ?? []) recordDecision().run(runId, ...decisionValues(d));
  for (const e of batch.events ?? [])
    recordEvent().run(
      ms(e.at),
      e.kind,
      e.policy ?? null,
      e.repository ?? null,
      JSON.stringify(e.detail ?? {}),
    );
  for (const b of batch.batches ?? []) {
    if (b.openedAt) db.prepare(SQL.openBatch).run(b.automation, ms(b.openedAt));
    else db.prepare(SQL.closeBatch).run(b.automation);
  }
  const f = batch.finishRun;
  if (f) {
    const c = carrier.columns(plan, batch, first);
    const result = carrier.result(plan, batch);
    db.prepare(SQL.finishRun).run(
      ms(f.endedAt),
      JSON.stringify(result ?? null),
      c.base,
      c.first,
      c.count,
      c.excluded,
      f.runId,
    );
  }
  // For the caller once the savepoint holds: the carrier learns only what was written.
  return () => carrier.written(plan, batch);
}
