/**
 * The cost of PostgreSQL over SQLite for one process: the store traffic of a steady-state pass
 * over 500 image repositories and 500 policies (each with 50 tags, one new tag per scan), as
 * src/run/pass.ts issues it — one read of the last scans, a scan transaction per repository
 * (8 at a time, as the pass scans), three batched reads for the policies, one write of their
 * outcomes, one write of the decisions with the run's end. No registry or git: only the store.
 * PostgreSQL is a real server on loopback (test/helpers/postgres.ts, fsync off as in the tests).
 * BENCH_TAGS sets the tags per repository (default 50); BENCH_UNCHANGED=1 lists the same tags
 * in every pass (the steady state of most repositories: issue 27's unchanged rescans).
 * BENCH_HISTORY=N runs N passes first, unmeasured (a store that has run for a while: 1,000 passes
 * are ~3.5 days at a 5-minute interval), and prints what a pass then costs. On SQLite it also
 * prints the bytes a pass writes (this process's `wchar` in /proc/self/io, the WAL and its
 * checkpoints): a history table's index keyed by repository or policy takes each pass's row on
 * another page for each of them once the index outgrows a page a key. BENCH_BACKENDS=sqlite (or
 * postgresql) runs one of the two (default both).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPostgres } from '../test/helpers/postgres.js';
import { bytesWritten as written } from '../test/helpers/written.js';
import type { Decision } from '../src/records/index.js';
import { openPostgresStore, openSqliteStore, type Store } from '../src/store/index.js';
import { diffTags } from '../src/scan/index.js';
import { pool } from '../src/util/index.js';

const REPOS = Number(process.env.BENCH_REPOS ?? 500);
const TAGS = Number(process.env.BENCH_TAGS ?? 50);
const UNCHANGED = process.env.BENCH_UNCHANGED === '1';
const PASSES = 3;
const HISTORY = Number(process.env.BENCH_HISTORY ?? 0);
const BACKENDS = (process.env.BENCH_BACKENDS ?? 'sqlite,postgresql').split(',');

const repos = Array.from({ length: REPOS }, (_, i) => `bench/r${i}`);
const tagsAt = (pass: number) => Array.from({ length: TAGS + (UNCHANGED ? 0 : pass) }, (_, i) => `1.0.${i}`);

async function scanAll(store: Store, pass: number, at: Date): Promise<void> {
  const tags = tagsAt(pass);
  await pool(repos, 8, async (r) => {
    const id = await store.beginScan(r, `example.com/${r}`, at);
    await store.finishScan(id, { outcome: 'ok', tags, requests: 1, endedAt: at }, diffTags);
  });
}

/** Pass `n`'s store traffic at `hour` (a pass of the history, n = 0, lists the first tags); ms per phase. */
async function pass(store: Store, n: number, hour = n): Promise<Record<string, number>> {
  const at = new Date(Date.UTC(2026, 0, 1, hour));
  const times: Record<string, number> = {};
  let t = performance.now();
  const lap = (name: string) => {
    const now = performance.now();
    times[name] = now - t;
    t = now;
  };
  const runId = await store.beginRun(at, 'run');
  await store.latestScans(repos);
  lap('begin + latestScans');
  await scanAll(store, n, at);
  lap('500 scans');
  const [states] = await Promise.all([
    store.policyStates(repos),
    store.latestScans(repos),
    store.currentTagsOf(repos),
  ]);
  lap('policy reads');
  const candidate = tagsAt(n).at(-1)!;
  await store.write({
    tagDigests: repos.map((r) => ({ repository: r, tag: candidate, digest: `sha256:${n}`, at })),
    policyStates: repos.map((r) => ({
      policy: r,
      state: {
        specHash: 'h',
        highWater: candidate,
        highWaterAt: states.get(r)?.highWaterAt ?? at,
        pending: null,
      },
    })),
    selections: repos.map((r) => ({ policy: r, at, candidate, error: null })),
  });
  lap('policy write');
  const decisions: Decision[] = repos.map((r, i) => ({
    automation: 'bench/fleet',
    file: `apps/${i}.yaml`,
    line: 7,
    setter: `bench:${r}`,
    policy: r,
    current: `example.com/${r}:1.0.0`,
    candidate: `example.com/${r}:${candidate}`,
    reason: 'up-to-date',
    detail: 'The value is the candidate.',
    action: 'keep',
  }));
  await store.write({
    decisions: { runId, decisions },
    finishRun: { runId, result: { ok: true }, endedAt: at },
  });
  lap('decisions + end');
  return times;
}

/** `inProcess`: the store writes its files from this process (SQLite), so `written()` counts them. */
async function measure(name: string, store: Store, inProcess: boolean): Promise<void> {
  let t = performance.now();
  await scanAll(store, 0, new Date(Date.UTC(2026, 0, 1)));
  console.log(
    `${name}: first scans of ${REPOS} repositories × ${TAGS} tags: ${Math.round(performance.now() - t)} ms`,
  );
  if (HISTORY > 0) {
    t = performance.now();
    for (let i = 1; i <= HISTORY; i++) await pass(store, 0, i);
    console.log(`${name}: ${HISTORY} passes of history first: ${Math.round(performance.now() - t)} ms`);
  }
  const runs: Record<string, number>[] = [];
  const bytes: number[] = [];
  for (let i = 1; i <= PASSES; i++) {
    await store.flush();
    const w0 = written();
    runs.push(await pass(store, i, HISTORY + i));
    await store.flush();
    bytes.push(written() - w0);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const phases = Object.keys(runs[0]!);
  const totals = runs.map((r) => Object.values(r).reduce((a, b) => a + b, 0));
  console.log(
    `${name}: steady-state pass (median of ${PASSES}): ${Math.round(median(totals))} ms — ` +
      phases.map((p) => `${p} ${Math.round(median(runs.map((r) => r[p]!)))} ms`).join(', ') +
      (inProcess ? `; ${(median(bytes) / 1e6).toFixed(1)} MB written a pass` : '') +
      (HISTORY > 0 ? ` (after ${HISTORY} passes of history)` : ''),
  );
  t = performance.now();
  await store.close();
}

console.log(
  `load average before: ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
const dir = await mkdtemp(join(tmpdir(), 'pawl-bench-store-'));
const pg = BACKENDS.includes('postgresql') ? await startPostgres() : null;
try {
  if (BACKENDS.includes('sqlite')) await measure('SQLite', openSqliteStore(dir), true);
  if (pg) await measure('PostgreSQL', await openPostgresStore({ url: pg.url }), false);
} finally {
  await pg?.close();
  await rm(dir, { recursive: true, force: true });
}
console.log(
  `load average after: ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
