import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { MarkerParser, PARALLEL_MIN_BYTES, PARALLEL_MIN_FILES } from '../../src/write/setters/parallel.js';
import { scanTree } from '../../src/write/setters/tree.js';

const temps: string[] = [];
after(async () => {
  for (const t of temps) await rm(t, { recursive: true, force: true });
});

function fileText(i: number): string {
  const pad = Array.from({ length: 40 }, (_, k) => `  k${k}: value ${i}-${k}`).join('\n');
  return `apiVersion: v1\nkind: Pod\nmetadata:\n  name: p${i}\nspec:\n  containers:\n  - name: c\n    image: app:${i}.0.0 # {"$imagepolicy": "ns:p${i % 7}"}\nextra:\n${pad}\n`;
}

test('a worker-assisted scan finds exactly what a single-threaded scan finds', async () => {
  const root = await mkdtemp(join(tmpdir(), 'pawl-parallel-'));
  temps.push(root);
  const n = PARALLEL_MIN_FILES + 100;
  for (let i = 0; i < n; i++) {
    await mkdir(join(root, `d${i % 10}`), { recursive: true });
    // A few broken files: errors must be reported the same way from either thread.
    const text = i % 97 === 0 ? 'a: [b # {"$imagepolicy": "ns:p0"}\nc: d\n' : fileText(i);
    await writeFile(join(root, `d${i % 10}`, `f${i}.yaml`), text);
  }
  const prev = process.env.PAWL_PARSE_WORKERS;
  process.env.PAWL_PARSE_WORKERS = '0';
  const single = await scanTree(root, '.');
  if (prev === undefined) delete process.env.PAWL_PARSE_WORKERS;
  else process.env.PAWL_PARSE_WORKERS = prev;
  const parallel = await scanTree(root, '.');
  assert.ok(
    single.files.reduce((b, f) => b + f.text.length, 0) >= PARALLEL_MIN_BYTES,
    'tree too small to use the worker',
  );
  assert.equal(single.errors.length, 4);
  assert.deepEqual(parallel, single);
});

test('when the worker dies, its share is parsed on the main thread', async () => {
  const jobs = Array.from({ length: PARALLEL_MIN_FILES }, (_, i) => ({
    file: `f${i}.yaml`,
    text: fileText(i),
  }));
  const p = MarkerParser.start(jobs.length);
  const worker = (p as unknown as { worker: Worker | null }).worker;
  if (worker) await worker.terminate();
  const res = await p.parseAll(jobs);
  await p.close();
  assert.equal(res.length, jobs.length);
  assert.ok(res.every((r, i) => r.error === null && r.markers[0]?.value === `app:${i}.0.0`));
});
