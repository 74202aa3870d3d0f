/**
 * `npm run mutate [-- --area NAME …] [--match TEXT] [--list] [--timeout SECONDS]`: plants each bug of
 * scripts/mutations.ts, one at a time, and runs the test files that should catch it. A bug the
 * tests do not fail on is "missed"; a snippet that no longer occurs exactly once in its file is
 * "stale" (the code moved on: update the entry). Prints every result, then caught/missed per
 * area, and exits 1 when anything was missed or stale. docs/testing.md says how to add one.
 *
 * The bugs are planted in a copy of the working tree in a temporary directory, never in the
 * tree itself, so no mutation can be left behind whatever stops the run (Ctrl-C, a crash, a
 * kill): the copy is removed on the way out and is only ever a copy. Before any bug, each set
 * of test files is run once on the unchanged copy: a set that fails already would "catch"
 * every bug, so its bugs are reported as not measured instead.
 */
import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { transformSync } from 'esbuild';
import { MUTATIONS, type Mutation } from './mutations.js';

const root = dirname(dirname(fileURLToPath(import.meta.url)));

interface Options {
  areas: string[];
  /** Only the mutations whose description contains one of these. */
  match: string[];
  list: boolean;
  timeoutMs: number;
}

function parseArgs(argv: string[]): Options {
  const o: Options = { areas: [], match: [], list: false, timeoutMs: 600_000 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--area') o.areas.push(...(argv[++i] ?? '').split(',').filter(Boolean));
    else if (a.startsWith('--area=')) o.areas.push(...a.slice('--area='.length).split(',').filter(Boolean));
    else if (a === '--match') o.match.push(argv[++i] ?? '');
    else if (a === '--list') o.list = true;
    else if (a === '--timeout') o.timeoutMs = Number(argv[++i]) * 1000;
    else {
      process.stderr.write(
        `mutate: unknown argument ${a}; use --area NAME, --match TEXT, --list, --timeout SECONDS\n`,
      );
      process.exit(2);
    }
  }
  const known = new Set(MUTATIONS.map((m) => m.area));
  const unknown = o.areas.filter((a) => !known.has(a));
  if (unknown.length > 0) {
    process.stderr.write(`mutate: no area ${unknown.join(', ')}; the areas are ${[...known].join(', ')}\n`);
    process.exit(2);
  }
  if (!Number.isFinite(o.timeoutMs) || o.timeoutMs <= 0) {
    process.stderr.write('mutate: --timeout needs a number of seconds\n');
    process.exit(2);
  }
  return o;
}

/** How often `snippet` occurs in `text` (overlapping occurrences counted). */
export function occurrences(text: string, snippet: string): number {
  if (snippet === '') return 0;
  let n = 0;
  for (let at = text.indexOf(snippet); at >= 0; at = text.indexOf(snippet, at + 1)) n++;
  return n;
}

/** A copy of the working tree (tracked and untracked, not ignored files), with node_modules linked. */
async function copyTree(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'pawl-mutate-'));
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  })
    .split('\0')
    .filter((f) => f !== '' && f !== 'node_modules');
  for (const f of files) {
    const from = join(root, f);
    const st = await stat(from).catch(() => undefined);
    if (!st?.isFile()) continue; // deleted in the working tree, or a submodule
    await mkdir(dirname(join(dir, f)), { recursive: true });
    await copyFile(from, join(dir, f));
    await chmod(join(dir, f), st.mode & 0o777);
  }
  await symlink(realpathSync(join(root, 'node_modules')), join(dir, 'node_modules'));
  return dir;
}

const running = new Set<number>();

/** Runs the test files in `cwd`; true when they pass. A run past the timeout counts as failing. */
function runTests(
  cwd: string,
  tests: readonly string[],
  timeoutMs: number,
): Promise<{ ok: boolean; timedOut: boolean }> {
  return new Promise((done) => {
    const env = { ...process.env };
    const conformance = resolve(root, '..', 'shared', 'conformance', 'flux');
    if (!env.PAWL_CONFORMANCE_DIR && existsSync(conformance)) env.PAWL_CONFORMANCE_DIR = conformance;
    const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=dot', ...tests], {
      cwd,
      env,
      stdio: 'ignore',
      detached: true,
    });
    const pid = child.pid!;
    running.add(pid);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(pid);
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      running.delete(pid);
      done({ ok: code === 0 && !timedOut, timedOut });
    });
  });
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

type Outcome = 'caught' | 'missed' | 'stale' | 'broken' | 'unmeasured';

/** Why the mutated text is not TypeScript at all, or undefined: a syntax error would "catch" itself. */
function syntaxError(text: string): string | undefined {
  try {
    transformSync(text, { loader: 'ts', format: 'esm' });
    return undefined;
  } catch (err) {
    return (err as Error).message.split('\n').slice(0, 2).join(' ');
  }
}

const TAGS: Record<Outcome, string> = {
  caught: 'caught ',
  missed: 'MISSED ',
  stale: 'STALE  ',
  broken: 'BROKEN ',
  unmeasured: 'UNMEAS ',
};

interface Result {
  m: Mutation;
  outcome: Outcome;
  note: string;
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const selected = MUTATIONS.filter(
    (m) =>
      (o.areas.length === 0 || o.areas.includes(m.area)) &&
      (o.match.length === 0 || o.match.some((t) => m.description.includes(t))),
  );
  if (o.list) {
    for (const m of selected) process.stdout.write(`${m.area}\t${m.file}\t${m.description}\n`);
    return;
  }
  const copy = await copyTree();
  let cleaned = false;
  const cleanup = async (): Promise<void> => {
    if (cleaned) return;
    cleaned = true;
    for (const pid of running) killGroup(pid);
    await rm(copy, { recursive: true, force: true });
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      process.stderr.write(`\nmutate: ${signal}; removing the copy ${copy}\n`);
      void cleanup().then(() => process.exit(130));
    });
  }
  try {
    process.stdout.write(`mutate: ${selected.length} mutations, planted in a copy at ${copy}\n`);
    const baseline = new Map<string, boolean>();
    for (const tests of new Set(selected.map((m) => m.tests.join(' ')))) {
      const r = await runTests(copy, tests.split(' '), o.timeoutMs);
      baseline.set(tests, r.ok);
      if (!r.ok) process.stdout.write(`mutate: FAILING WITHOUT ANY MUTATION: ${tests}\n`);
    }
    const results: Result[] = [];
    for (const m of selected) {
      const file = join(copy, m.file);
      const original = await readFile(file, 'utf8').catch(() => undefined);
      let r: Result;
      const n = original === undefined ? 0 : occurrences(original, m.find);
      if (original === undefined) r = { m, outcome: 'stale', note: `${m.file} does not exist` };
      else if (n !== 1)
        r = { m, outcome: 'stale', note: `the snippet occurs ${n} times in ${m.file}, not once` };
      else if (!baseline.get(m.tests.join(' ')))
        r = { m, outcome: 'unmeasured', note: 'its tests fail without the mutation' };
      else if (syntaxError(original.replace(m.find, () => m.replace)) !== undefined) {
        const why = syntaxError(original.replace(m.find, () => m.replace));
        r = { m, outcome: 'broken', note: `the mutated file does not parse: ${why}` };
      } else {
        await writeFile(
          file,
          original.replace(m.find, () => m.replace),
        );
        try {
          const t = await runTests(copy, m.tests, o.timeoutMs);
          r = t.ok
            ? { m, outcome: 'missed', note: '' }
            : { m, outcome: 'caught', note: t.timedOut ? 'timed out' : '' };
        } finally {
          await writeFile(file, original);
        }
      }
      // Interrupted: the test run was killed, which says nothing about the mutation.
      if (cleaned) return;
      results.push(r);
      const tag = TAGS[r.outcome];
      process.stdout.write(
        `${tag} [${m.area}] ${m.description} (${m.file})${r.note ? ` — ${r.note}` : ''}\n`,
      );
    }
    report(results);
    process.exitCode = results.every((r) => r.outcome === 'caught') ? 0 : 1;
  } finally {
    await cleanup();
  }
}

function report(results: Result[]): void {
  process.stdout.write('\narea                      caught  missed  stale  broken  unmeasured  caught %\n');
  const areas = [...new Set(results.map((r) => r.m.area))];
  for (const area of areas) {
    const of = results.filter((r) => r.m.area === area);
    const count = (k: Outcome): number => of.filter((r) => r.outcome === k).length;
    const measured = count('caught') + count('missed');
    const pct = measured === 0 ? '-' : `${Math.round((100 * count('caught')) / measured)} %`;
    process.stdout.write(
      `${area.padEnd(26)}${String(count('caught')).padStart(6)}${String(count('missed')).padStart(8)}${String(count('stale')).padStart(7)}${String(count('broken')).padStart(8)}${String(count('unmeasured')).padStart(12)}  ${pct.padStart(8)}\n`,
    );
  }
  const missed = results.filter((r) => r.outcome !== 'caught');
  if (missed.length > 0) {
    process.stdout.write('\nnot caught:\n');
    for (const r of missed)
      process.stdout.write(
        `  ${r.outcome.padEnd(10)} [${r.m.area}] ${r.m.description} — ${r.m.file}; tests: ${r.m.tests.join(' ')}\n`,
      );
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
