/** A batch of writes on PostgreSQL (`Store.write`): one statement per kind of record, in one transaction. */
import type { Decision } from '../../records/index.js';
import type { DecisionCarrier } from '../carry.js';
import { DECISION_FIELDS, ms, pendingJson } from '../rows.js';
import type { StoreWrite } from '../types.js';
import type { Q } from './session.js';
import { SQL } from './sql.js';

/** Whether a batch writes anything: an empty one needs no transaction. */
/** Decisions as one array per column (DECISION_FIELDS's order), for an INSERT … SELECT unnest(…). */
const columns = (ds: readonly Decision[]) => DECISION_FIELDS.map((k) => ds.map((d) => d[k]));

export function isEmpty(batch: StoreWrite): boolean {
  return (
    !batch.tagDigests?.length &&
    !batch.policyStates?.length &&
    !batch.selections?.length &&
    !batch.decisions?.decisions.length &&
    !batch.events?.length &&
    !batch.batches?.length &&
    !batch.finishRun
  );
}

/**
 * Applies `batch` in the order `StoreWrite` names, on the connection holding its transaction; the
 * caller calls the returned function once it is committed (the carrier's next base, ../carry.ts).
 */
export async function writeBatch(c: Q, batch: StoreWrite, carrier: DecisionCarrier): Promise<() => void> {
  const digests = batch.tagDigests ?? [];
  if (digests.length > 0) {
    // The last word on a tag wins, as one upsert after another would have it.
    const rows = [...new Map(digests.map((d) => [`${d.repository}\n${d.tag}`, d])).values()];
    await c.query(SQL.setTagDigests, [
      rows.map((d) => d.repository),
      rows.map((d) => d.tag),
      rows.map((d) => d.digest),
      rows.map((d) => ms(d.at)),
    ]);
  }
  const states = batch.policyStates ?? [];
  if (states.length > 0) {
    const rows = [...new Map(states.map((s) => [s.policy, s])).values()];
    await c.query(SQL.setPolicyStates, [
      rows.map((s) => s.policy),
      rows.map((s) => s.state.specHash),
      rows.map((s) => s.state.highWater),
      rows.map((s) => (s.state.highWaterAt ? ms(s.state.highWaterAt) : null)),
      rows.map((s) => pendingJson(s.state)),
    ]);
  }
  const selections = batch.selections ?? [];
  if (selections.length > 0) {
    await c.query(SQL.recordSelections, [
      selections.map((s) => s.policy),
      selections.map((s) => ms(s.at)),
      selections.map((s) => s.candidate),
      selections.map((s) => s.error),
      selections.map((s) => (s.unverified ? JSON.stringify(s.unverified) : null)),
    ]);
  }
  const ds = batch.decisions?.decisions ?? [];
  let earlier = false;
  if (ds.length > 0) {
    const runId = batch.decisions!.runId;
    earlier = (await c.query<{ earlier: boolean }>(SQL.lockDecisions, [runId])).rows[0]!.earlier;
  }
  const plan = carrier.plan(batch, earlier);
  let first: number | null = null;
  if (plan.carried) {
    const last = (await c.query<{ last: string | number }>(SQL.reserveDecisions, [ds.length])).rows[0]!.last;
    first = Number(last) - ds.length + 1;
    if (plan.own.length > 0)
      await c.query(SQL.recordDecisionsAt, [
        batch.decisions!.runId,
        plan.own.map((o) => first! + o.pos),
        ...columns(plan.own.map((o) => o.decision)),
      ]);
  } else if (ds.length > 0) {
    await c.query(SQL.recordDecisions, [batch.decisions!.runId, ...columns(ds)]);
  }
  const es = batch.events ?? [];
  if (es.length > 0) {
    await c.query(SQL.recordEvents, [
      es.map((e) => ms(e.at)),
      es.map((e) => e.kind),
      es.map((e) => e.policy ?? null),
      es.map((e) => e.repository ?? null),
      es.map((e) => JSON.stringify(e.detail ?? {})),
    ]);
  }
  // The last word on an automation wins, as one statement after another would have it.
  const batches = [...new Map((batch.batches ?? []).map((b) => [b.automation, b])).values()];
  const opened = batches.filter((b) => b.openedAt !== null);
  const closed = batches.filter((b) => b.openedAt === null).map((b) => b.automation);
  if (opened.length > 0)
    await c.query(SQL.openBatchesWrite, [
      opened.map((b) => b.automation),
      opened.map((b) => ms(b.openedAt!)),
    ]);
  if (closed.length > 0) await c.query(SQL.closeBatches, [closed]);
  const f = batch.finishRun;
  if (f) {
    const cols = carrier.columns(plan, batch, first);
    const result = carrier.result(plan, batch);
    await c.query(SQL.finishRun, [
      ms(f.endedAt),
      JSON.stringify(result ?? null),
      cols.base,
      cols.first,
      cols.count,
      cols.excluded,
      f.runId,
    ]);
  }
  return () => carrier.written(plan, batch);
}
