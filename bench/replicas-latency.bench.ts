/**
 * Replicas (issue 16): does a webhook that reaches a replica which does not own the automation
 * land just as fast? Three `pawl serve` replicas on one PostgreSQL (test/serve/replicas-world.ts:
 * the registry notifies replica 0 only; one repository per automation, all following one policy).
 * Each push of a new tag (BENCH_PUSHES, default 10) must become a commit in every automation's
 * repository (BENCH_AUTOMATIONS, default 9); the time runs from the registry's answer to the push
 * until each repository's ref file changes (read every millisecond). The latencies are grouped by
 * the replica that owns the automation: replica 0, which received the notification, and the two
 * that heard of it through the database (NOTIFY). Figures are reported, never asserted.
 */
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { pushTags } from '../test/helpers/push.js';
import type { ServeProcess } from '../test/helpers/serve.js';
import { startReplicaWorld } from '../test/serve/replicas-world.js';
import { watchRefs } from './ref-watch.js';

const PUSHES = Number(process.env.BENCH_PUSHES ?? 10);
const AUTOMATIONS = Number(process.env.BENCH_AUTOMATIONS ?? 9);

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length === 0 ? NaN : s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

const w = await startReplicaWorld(AUTOMATIONS);
const replicas: ServeProcess[] = [];
const refs = watchRefs(
  Array.from({ length: AUTOMATIONS }, (_, i) => join(w.git.repoPath(w.repo(i)), 'refs', 'heads', 'main')),
);
const heads = () => refs.read();
let failed = false;
try {
  await pushTags(w.registry.url, 'team/app', ['1.0.0']);
  for (let i = 0; i < 3; i++) replicas.push(await w.start(i));

  // Ownership settles once every replica has seen the others' heartbeats.
  const owners = new Map<string, number>();
  const deadline = Date.now() + 60_000;
  while (owners.size < AUTOMATIONS) {
    if (Date.now() > deadline) throw new Error(`only ${owners.size} automations have an owner after 60 s`);
    await new Promise((r) => setTimeout(r, 500));
    owners.clear();
    for (const [r, serve] of replicas.entries()) {
      const { json } =
        await serve.adminGet<{ name: string; job: { owner: boolean } | null }[]>('/api/v1/automations');
      for (const a of json) if (a.job?.owner) owners.set(a.name, r);
    }
    // Every replica must see all three live, or their owners disagree.
    for (const serve of replicas) {
      const { json } = await serve.adminGet<{ replicas: { live: boolean }[] }>('/api/v1/replicas');
      if (json.replicas.filter((r) => r.live).length < 3) owners.clear();
    }
  }
  const ownerOf = (i: number) => owners.get(`flux-system/${w.repo(i)}`)!;
  const byOwner = [0, 1, 2].map((r) =>
    Array.from({ length: AUTOMATIONS }, (_, i) => i).filter((i) => ownerOf(i) === r),
  );
  console.log(
    `owners: replica 0 (notified) ${byOwner[0]!.length}, replica 1 ${byOwner[1]!.length}, replica 2 ${byOwner[2]!.length}`,
  );

  const notified: number[] = [];
  const others: number[] = [];
  for (let k = 1; k <= PUSHES + 1; k++) {
    const tag = `1.${k}.0`;
    const before = await heads();
    await pushTags(w.registry.url, 'team/app', [tag]);
    const answered = performance.now();
    const landed = new Array<number | null>(AUTOMATIONS).fill(null);
    while (landed.some((x) => x === null)) {
      if (performance.now() - answered > 60_000)
        throw new Error(`push of ${tag}: not every repository within 60 s`);
      const now = await heads();
      const at = performance.now() - answered;
      for (let i = 0; i < AUTOMATIONS; i++) if (landed[i] === null && now[i] !== before[i]) landed[i] = at;
      await refs.changed();
    }
    // The first push warms every replica's workspace and JIT.
    if (k === 1) continue;
    for (let i = 0; i < AUTOMATIONS; i++) (ownerOf(i) === 0 ? notified : others).push(landed[i]!);
  }
  for (let i = 0; i < AUTOMATIONS; i++) {
    const tag = await w.tagOf(i);
    if (tag !== `1.${PUSHES + 1}.0`) throw new Error(`${w.repo(i)} holds ${tag}`);
  }
  const fmt = (xs: number[]) =>
    `median ${Math.round(median(xs))} ms, max ${Math.round(Math.max(...xs))} ms over ${xs.length}`;
  console.log(
    `replicas latency: ${PUSHES} pushes × ${AUTOMATIONS} automations on 3 replicas, registry → commit`,
  );
  console.log(`  owned by the notified replica: ${fmt(notified)}`);
  console.log(`  owned by the other two:        ${fmt(others)}`);
  console.log(
    `  load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
} catch (err) {
  console.error(`FAIL: ${(err as Error).message}`);
  failed = true;
} finally {
  refs.close();
  for (const r of replicas) await r.stop().catch(() => undefined);
  await w.close();
}
process.exitCode = failed ? 1 : 0;
