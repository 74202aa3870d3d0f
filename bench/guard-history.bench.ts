/**
 * Cost of reading pins from Git for a 500-manifest repository: `lineHistory` over every marked
 * line (one blame per file, one diff per blamed commit, one cat-file and one log in total), at
 * several concurrencies, next to the cost of finding the markers (the unguarded pass reads and
 * parses the same files). Figures only; nothing is asserted.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lineHistory, type HistoryRequest } from '../src/git/history.js';
import { findMarkers } from '../src/write/setters/markers.js';

const FILES = Number(process.env.BENCH_FILES ?? 500);
const COMMITS = Number(process.env.BENCH_COMMITS ?? 20);
const dir = mkdtempSync(join(tmpdir(), 'pawl-bench-history-'));
const env = {
  ...process.env,
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_AUTHOR_NAME: 'b',
  GIT_AUTHOR_EMAIL: 'b@x',
  GIT_COMMITTER_NAME: 'b',
  GIT_COMMITTER_EMAIL: 'b@x',
};
const git = (...a: string[]) =>
  execFileSync('git', a, { cwd: dir, env, encoding: 'utf8', maxBuffer: 1 << 28 });

const manifest = (i: number, v: number) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-${i}
  labels:
    app: app-${i}
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/org/app-${i}:1.${v}.0 # {"$imagepolicy": "apps:app-${i % 50}"}
          ports:
            - containerPort: 8080
        - name: sidecar
          image: ghcr.io/org/proxy:2.${v}.0 # {"$imagepolicy": "apps:proxy:tag"}
`;

try {
  git('init', '-q', '-b', 'main');
  mkdirSync(join(dir, 'apps'));
  for (let c = 0; c < COMMITS; c++) {
    // Automation commits touch every file; every fifth commit a person rolls back a tenth of them.
    for (let i = 0; i < FILES; i++) {
      const v = c % 5 === 4 && i % 10 === 0 ? c - 2 : c;
      writeFileSync(join(dir, 'apps', `app-${i}.yaml`), manifest(i, v));
    }
    git('add', '-A');
    git('commit', '-q', '-m', `update ${c}`);
  }

  const t0 = performance.now();
  const requests: HistoryRequest[] = [];
  for (let i = 0; i < FILES; i++) {
    const file = `apps/app-${i}.yaml`;
    const text = readFileSync(join(dir, file), 'utf8');
    const { markers } = findMarkers(text, file);
    requests.push({
      file,
      text,
      lines: markers.map((m) => ({ line: m.line, setter: m.setter, field: m.field, value: m.value })),
    });
  }
  const findMs = performance.now() - t0;
  console.log(
    `${FILES} manifests, ${requests.reduce((n, r) => n + r.lines.length, 0)} marked lines, ${COMMITS} commits of history`,
  );
  console.log(`read + findMarkers: ${findMs.toFixed(0)} ms`);

  for (const [label, opts] of [
    ['line-log (default)', {}],
    ['blame, 1 at a time', { method: 'blame', concurrency: 1 }],
    ['blame, 8 at a time', { method: 'blame', concurrency: 8 }],
  ] as const) {
    const s = performance.now();
    const h = await lineHistory(dir, requests, opts);
    const ms = performance.now() - s;
    let withPrevious = 0;
    for (const m of h.values()) for (const c of m.values()) if (c?.previous) withPrevious++;
    console.log(
      `lineHistory ${label.padEnd(20)}: ${ms.toFixed(0).padStart(6)} ms (${(ms / FILES).toFixed(2)} ms/file, ${withPrevious} lines with a previous value)`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
