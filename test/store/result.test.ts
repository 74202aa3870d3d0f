/**
 * A base's lists as the writer keeps them (src/store/result.ts): a digest of each entry's JSON,
 * not the JSON, and an entry is carried only when its JSON is the base's, byte for byte.
 */
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Decision } from '../../src/records/index.js';
import { CarriedReader, DecisionCarrier } from '../../src/store/carry.js';
import type { StoreWrite } from '../../src/store/index.js';
import { keptLists, resultFromStore, resultToStore } from '../../src/store/result.js';
import { smallHash } from '../../src/util/index.js';
import { marker, reportOf } from './carried.js';

const policies = (n: number, at = -1, changed: Record<string, unknown> = {}) =>
  Array.from({ length: n }, (_, i) => ({
    name: `flux-system/app-${i}`,
    candidate: '1.2.0',
    error: null,
    ...(i === at ? changed : {}),
  }));

test('a base keeps 32 bytes an entry and none of its JSON', () => {
  const kept = keptLists({ repositories: [], policies: policies(1000) });
  const p = kept.get('policies')!;
  assert.equal(p.digests.length, 32 * 1000);
  for (let i = 0; i < 1000; i++) assert.equal(p.positions.get(smallHash(`flux-system/app-${i}`)), i);
  assert.deepEqual(Object.keys(p).sort(), ['digests', 'positions']);
});

test('carried: the entries whose JSON is the base’s; a changed value or key order is its own', () => {
  const base = keptLists({ repositories: [], policies: policies(100) });
  const cases: [string, Record<string, unknown>[]][] = [
    ['a changed value', policies(100, 7, { candidate: '1.3.0' })],
    ['an added key', policies(100, 7, { detail: 'x' })],
    // The same fields in another order are other JSON: read back from the base, they would differ.
    [
      'reordered keys',
      policies(100).map((e, i) => (i === 7 ? { error: e.error, name: e.name, candidate: e.candidate } : e)),
    ],
  ];
  for (const [what, list] of cases) {
    const result = { repositories: [], policies: list };
    const stored = resultToStore(result, [], base) as { policies: { own: [number, unknown][] } };
    assert.deepEqual(
      stored.policies.own.map(([pos]) => pos),
      [7],
      what,
    );
    const back = resultFromStore(
      JSON.parse(JSON.stringify(stored)),
      [],
      { repositories: [], policies: policies(100) },
      'run 2',
    );
    assert.equal(JSON.stringify(back), JSON.stringify(result), what);
  }
});

test('an entry changed in place is its own; a frozen one is digested once and carried', () => {
  // A daemon's unchanged rows are the same frozen objects pass after pass (run/shared-rows.ts),
  // whose digests the writer keeps; any other object may have changed since it was last seen.
  const list = policies(20);
  const base = keptLists({ repositories: [], policies: list });
  list[7]!.candidate = '1.3.0';
  const stored = resultToStore({ repositories: [], policies: list }, [], base) as {
    policies: { own: [number, unknown][] };
  };
  assert.deepEqual(
    stored.policies.own.map(([pos]) => pos),
    [7],
  );

  const frozen = policies(20).map((e) => Object.freeze(e));
  const frozenBase = keptLists({ repositories: [], policies: frozen });
  // Frozen or not, an entry's digest is its JSON's.
  assert.equal(
    frozenBase.get('policies')!.digests,
    keptLists({ repositories: [], policies: policies(20) }).get('policies')!.digests,
  );
  const again = resultToStore({ repositories: [], policies: frozen }, [], frozenBase) as {
    policies: { own: [number, unknown][]; excluded: number[] };
  };
  assert.deepEqual(again.policies.own, []);
  assert.deepEqual(again.policies.excluded, []);
});

/** Two values of `make(i)` whose smallHash of `key` is the same (a birthday search over 30 bits). */
function collision<T>(make: (i: number) => T, key: (t: T) => number): [T, T] {
  const seen = new Map<number, T>();
  for (let i = 0; ; i++) {
    const t = make(i);
    const k = key(t);
    const other = seen.get(k);
    if (other !== undefined) return [other, t];
    seen.set(k, t);
  }
}

test('smallHash: 30 bits, parts apart', () => {
  for (const parts of [['a'], ['ab', 'c'], ['a', 'bc'], ['x', 1], ['x', '1', '']])
    assert.ok(smallHash(...parts) >= 0 && smallHash(...parts) < 2 ** 30);
  assert.notEqual(smallHash('ab', 'c'), smallHash('a', 'bc'));
  assert.equal(smallHash('x', 1), smallHash('x', '1'));
});

test('two names sharing a hash: each entry still reads back as itself', () => {
  const [a, b] = collision(
    (i) => `flux-system/app-${i}`,
    (n) => smallHash(n),
  );
  const list = [a, b, 'flux-system/zz'].map((name) => ({ name, candidate: '1.0.0' }));
  const base = keptLists({ repositories: [], policies: list });
  // a changed; b did not, but its hash finds a's place, whose digest is not b's: b is stored
  // as the run's own (the cost of a collision), not read back as a.
  const next = [{ ...list[0]!, candidate: '1.1.0' }, { ...list[1]! }, { ...list[2]! }];
  const result = { repositories: [], policies: next };
  const stored = resultToStore(result, [], base) as { policies: { own: [number, unknown][] } };
  assert.deepEqual(
    stored.policies.own.map(([pos]) => pos),
    [0, 1],
  );
  const back = resultFromStore(
    JSON.parse(JSON.stringify(stored)),
    [],
    { repositories: [], policies: list },
    'run 2',
  );
  assert.equal(JSON.stringify(back), JSON.stringify(result));
});

test('two markers sharing a hash: neither is carried as the other', () => {
  const [x, y] = collision(
    (i) => marker('apps/fleet', i),
    (d) => smallHash(d.automation, d.file, d.line, d.setter, d.policy),
  );
  const carrier = new DecisionCarrier();
  const batch = (runId: number, ds: Decision[]): StoreWrite => ({
    decisions: { runId, decisions: ds },
    finishRun: { runId, result: reportOf(ds), endedAt: new Date(0) },
  });
  const others = Array.from({ length: 40 }, (_, i) => marker('apps/fleet', 1_000_000 + i));
  const first = batch(1, [x, y, ...others]);
  carrier.written(carrier.plan(first, false), first);
  // x moved to version 2; y did not, but its hash finds x's place, whose decision is not y's:
  // y is written as the run's own, never carried as x.
  const x2 = marker('apps/fleet', Number(/app-(\d+)/.exec(x.file)![1]), 2);
  const p2 = carrier.plan(batch(2, [x2, y, ...others]), false);
  assert.equal(p2.carried, true);
  assert.deepEqual(p2.carried ? p2.own.map((o) => o.decision) : null, [x2, y]);
});

test('a base result is held weakly: read again once collected, never while someone holds it', async () => {
  v8.setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const list = Array.from({ length: 50 }, (_, i) => ({ name: `flux-system/app-${i}`, candidate: '1.0.0' }));
  const baseResult = { repositories: [], policies: list };
  const next = list.map((e, i) => (i === 3 ? { ...e, candidate: '1.1.0' } : e));
  const stored = JSON.stringify(
    resultToStore({ repositories: [], policies: next }, [], keptLists(baseResult)),
  );
  let reads = 0;
  const reader = new CarriedReader({
    rows: () => Promise.resolve([]),
    run: () => Promise.resolve(null),
    carriedRuns: () => Promise.resolve([]),
    rowsOfRuns: () => Promise.resolve([]),
    result: () => {
      reads++;
      return Promise.resolve(JSON.stringify(baseResult));
    },
  });
  const row = {
    id: 2,
    at: 0,
    kind: 'run' as const,
    ended_at: 0,
    result: stored,
    decisions_base: 1,
    decisions_first: null,
    decisions_count: null,
    decisions_excluded: null,
  };
  const read = async () => {
    const r = await reader.run(row);
    assert.equal(JSON.stringify(r.result), JSON.stringify({ repositories: [], policies: next }));
  };
  await read();
  await read();
  assert.equal(reads, 1, 'kept while it lives');
  // WeakRef targets live at least to the end of the job that made them.
  await new Promise((r) => setImmediate(r));
  gc();
  await read();
  assert.equal(reads, 2, 'read again once collected');
});

test('automations that report the same lists share their bases’ digests of them', () => {
  v8.setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  // Ten selector-less automations over 10,000 policies each report every policy and repository.
  const policies = Array.from({ length: 10_000 }, (_, i) => ({
    name: `flux-system/app-${i}`,
    candidate: '1.0.0',
  }));
  const repositories = policies.map((p) => ({
    name: p.name,
    tags: 10,
    scanned: false,
    anomalies: [],
    error: null,
  }));
  const carrier = new DecisionCarrier();
  gc();
  const before = process.memoryUsage().heapUsed;
  for (let a = 0; a < 10; a++) {
    const ds = [marker(`flux-system/fleet-${a}`, a)];
    const batch: StoreWrite = {
      decisions: { runId: a + 1, decisions: ds },
      finishRun: { runId: a + 1, result: { repositories, policies, automations: [] }, endedAt: new Date(0) },
    };
    carrier.written(carrier.plan(batch, false), batch);
  }
  gc();
  const kept = process.memoryUsage().heapUsed - before;
  // One base's two lists are 20,000 digests of 32 bytes and their positions, ~0.8 MB; ten are 8 MB.
  assert.ok(kept < 3_000_000, `ten bases kept ${kept} bytes`);
  // And each still carries from its own base.
  const next: StoreWrite = {
    decisions: { runId: 11, decisions: [marker('flux-system/fleet-3', 3)] },
    finishRun: { runId: 11, result: { repositories, policies, automations: [] }, endedAt: new Date(0) },
  };
  const plan = carrier.plan(next, false);
  assert.equal(plan.carried, true);
  const stored = carrier.result(plan, next) as { policies: { own: unknown[]; excluded: number[] } };
  assert.deepEqual([stored.policies.own.length, stored.policies.excluded.length], [0, 0]);
});
