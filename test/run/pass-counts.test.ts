/**
 * Nothing quadratic in a pass (issue 27), by counts, never by time: the pass a webhook causes —
 * one repository rescanned, one marker moved, committed and pushed — among 10 and among 100
 * unchanged images makes the same number of store calls (round trips; each kind counted) and
 * starts the same number of git processes. A per-image query or git process, or a step that
 * grows with the images, makes the two differ.
 *
 * runPass is driven as the daemon drives it (src/serve/jobs/automation.ts: `rescan` names the
 * webhook's repository); git is counted by a `git` on PATH that records every process started in
 * the pass's state directory.
 */
import { strict as assert } from 'node:assert';
import { after, before, test } from 'node:test';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { loadConfig } from '../../src/config/index.js';
import { directScans, OutcomeCache, runPass } from '../../src/run/index.js';
import { factsMade } from '../../src/run/facts.js';
import { createScanClients } from '../../src/scan/index.js';
import { openSqliteStore, type Store, type StoreWrite } from '../../src/store/index.js';
import { silentLogger } from '../../src/util/log.js';
import { startGitServer, type GitServer } from '../helpers/git-server.js';
import { pushImage, seedTags } from '../helpers/push.js';
import { startRegistry, type TestRegistry } from '../helpers/registry.js';
import { GIT_PASSWORD, GIT_USER } from '../helpers/world.js';

let registry: TestRegistry;
let git: GitServer;
let base: string;
let gitLog: string;
const savedPath = process.env.PATH;

before(async () => {
  registry = await startRegistry({ auth: 'none' });
  git = await startGitServer({ users: { [GIT_USER]: GIT_PASSWORD } });
  base = await mkdtemp(join(tmpdir(), 'pawl-pass-counts-'));
  gitLog = join(base, 'git.log');
  const bin = join(base, 'bin');
  await mkdir(bin);
  const real = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
  await writeFile(join(bin, 'git'), `#!/bin/sh\necho "$PWD :: $*" >> '${gitLog}'\nexec '${real}' "$@"\n`);
  await chmod(join(bin, 'git'), 0o755);
  // pawl's git environment starts from process.env (src/git/exec.ts baseEnv), read per process.
  process.env.PATH = `${bin}:${savedPath ?? ''}`;
});

after(async () => {
  process.env.PATH = savedPath;
  await git?.close();
  await registry?.stop();
  await rm(base, { recursive: true, force: true });
});

interface Counts {
  store: Record<string, number>;
  /**
   * Rows asked for and written, by what they are: the policies whose state is read, the
   * repositories whose tags are read, and each kind of row a batch writes.
   */
  rows: Record<string, number>;
  git: string[];
  /** Daemon mode: the policies evaluated in the counted pass (not taken from the cache). */
  evaluated?: number;
  /** The repositories the counted pass made facts of (ImageFacts: what it may ask the registry). */
  facts: number;
  /** `again`: the git processes of a second webhook pass, which starts at the counted pass's own commit. */
  gitAgain?: string[];
}

/** Store calls by method while `on()` is true; everything else passes through unchanged. */
function counting(
  store: Store,
  on: () => boolean,
  calls: Record<string, number>,
  rows: Record<string, number>,
): Store {
  const add = (what: string, n: number) => (rows[what] = (rows[what] ?? 0) + n);
  return new Proxy(store, {
    get(target, key, receiver) {
      const v: unknown = Reflect.get(target, key, receiver);
      if (typeof v !== 'function' || typeof key !== 'string') return v;
      return (...args: unknown[]) => {
        if (on()) {
          calls[key] = (calls[key] ?? 0) + 1;
          if (key === 'policyStates' || key === 'currentTagsOf') add(key, (args[0] as unknown[]).length);
          if (key === 'write')
            for (const [kind, x] of Object.entries(args[0] as Record<string, unknown>))
              add(`write.${kind}`, Array.isArray(x) ? x.length : kind === 'decisions' ? 0 : 1);
          if (key === 'write')
            add('write.decisions', (args[0] as StoreWrite).decisions?.decisions.length ?? 0);
        }
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/**
 * `unchanged` images up to date plus one, `changed`, that gets a new tag: a warm-up pass scans
 * everything (nothing to write), then the counted pass rescans `changed` alone, as a webhook does.
 */
async function countPass(unchanged: number, mode: 'cli' | 'daemon' = 'cli', again = false): Promise<Counts> {
  const w = `w${unchanged}${mode === 'daemon' ? 'd' : ''}${again ? 'a' : ''}`;
  const images = Array.from({ length: unchanged + 1 }, (_, i) => `${w}/app-${i}`);
  await Promise.all(
    images.map(async (image, i) => {
      const { digest } = await pushImage(registry.url, image, '1.0.0', {
        created: new Date(Date.UTC(2024, 0, 1, 0, 0, i)),
      });
      await seedTags(registry.storageDir, image, ['1.1.0'], digest);
    }),
  );
  const files: Record<string, string> = {};
  images.forEach((image, i) => {
    files[`apps/app-${i}.yaml`] =
      `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-${i}\nspec:\n  template:\n    spec:\n      containers:\n` +
      `        - name: app\n          image: ${registry.host}/${image}:1.1.0 # {"$imagepolicy": "flux-system:app-${i}"}\n`;
  });
  await git.createBareRepo(w, files);
  const configDir = join(base, w, 'config');
  const stateDir = join(base, w, 'state');
  await mkdir(configDir, { recursive: true });
  const docs = [
    `apiVersion: v1\nkind: Secret\nmetadata:\n  name: git-credentials\n  namespace: flux-system\ntype: kubernetes.io/basic-auth\nstringData:\n  username: ${GIT_USER}\n  password: ${GIT_PASSWORD}\n`,
    `apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: fleet\n  namespace: flux-system\nspec:\n  interval: 1h\n  url: ${git.cloneUrl(w)}\n  ref:\n    branch: main\n  secretRef:\n    name: git-credentials\n`,
    `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n  name: fleet-${w}\n  namespace: flux-system\nspec:\n  interval: 1h\n  sourceRef:\n    kind: GitRepository\n    name: fleet\n  git:\n    commit:\n      author:\n        name: pawl\n        email: pawl@example.com\n  update:\n    path: ./apps\n    strategy: Setters\n`,
    ...images.map(
      (image, i) =>
        `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n  name: app-${i}\n  namespace: flux-system\nspec:\n  image: ${registry.host}/${image}\n  interval: 1h\n  insecure: true\n---\n` +
        `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: app-${i}\n  namespace: flux-system\nspec:\n  imageRepositoryRef:\n    name: app-${i}\n  policy:\n    semver:\n      range: ">=1.0.0"\n`,
    ),
  ];
  await writeFile(join(configDir, 'objects.yaml'), docs.join('---\n'));
  // Each world its own automation: its commit's trailers differ, so neither pass reuses the
  // other's interpret-trailers answer (src/git/commit.ts), and both start the same processes.
  const { config } = await loadConfig([configDir]);
  assert.equal(config.imagePolicies.size, unchanged + 1);

  const calls: Record<string, number> = {};
  const rows: Record<string, number> = {};
  let counted = false;
  const raw = openSqliteStore(stateDir);
  const store = counting(raw, () => counted, calls, rows);
  // As src/serve/jobs/automation.ts runs its passes: one cache of outcomes for all of them.
  const outcomes = mode === 'daemon' ? new OutcomeCache() : undefined;
  try {
    const clients = createScanClients(config, { log: silentLogger, buildTimes: store.buildTimeCache() });
    const deps = {
      config,
      store,
      stateDir,
      clients,
      log: silentLogger,
      scans: directScans({ clients, store, log: silentLogger }),
      ...(outcomes ? { outcomes } : {}),
    };
    const warm = await runPass(deps);
    assert.deepEqual(
      warm.automations.map((a) => [a.result, a.error]),
      [['up-to-date', null]],
    );
    assert.equal(warm.repositories.filter((r) => r.scanned).length, unchanged + 1);

    await pushImage(registry.url, images[0]!, '1.2.0', { created: new Date(Date.UTC(2024, 1, 1)) });
    const before = (await readFile(gitLog, 'utf8')).split('\n').length - 1;
    counted = true;
    const reusedBefore = outcomes?.counts.reused ?? 0;
    const factsBefore = factsMade();
    const report = await runPass(deps, {
      rescan: { repositories: new Set(['flux-system/app-0']), since: Date.now() },
    });
    const facts = factsMade() - factsBefore;
    counted = false;
    const lines = (await readFile(gitLog, 'utf8')).split('\n').slice(before, -1);
    const [ar] = report.automations;
    assert.equal(ar?.result, 'pushed', ar?.error ?? '');
    assert.deepEqual(
      ar.changes.map((c) => [c.policy, c.new.slice(c.new.lastIndexOf(':') + 1)]),
      [['flux-system/app-0', '1.2.0']],
    );
    assert.deepEqual(
      report.repositories.filter((r) => r.scanned).map((r) => r.name),
      ['flux-system/app-0'],
    );
    // The pass's own git processes (the git server's live elsewhere), by subcommand.
    const subcommands = (ls: string[]): string[] =>
      ls
        .filter((l) => l.startsWith(stateDir))
        .map((l) => l.slice(l.indexOf(' :: ') + 4).split(' ')[0]!)
        .map((sub) => (sub.startsWith('--git-dir=') ? 'config' : sub === '-c' ? 'log' : sub));
    let gitAgain: string[] | undefined;
    if (again) {
      // The next webhook of the same image: the remote is at the commit the pass above pushed.
      await pushImage(registry.url, images[0]!, '1.3.0', { created: new Date(Date.UTC(2024, 2, 1)) });
      const from = (await readFile(gitLog, 'utf8')).split('\n').length - 1;
      const next = await runPass(deps, {
        rescan: { repositories: new Set(['flux-system/app-0']), since: Date.now() },
      });
      const [nr] = next.automations;
      assert.equal(nr?.result, 'pushed', nr?.error ?? '');
      assert.deepEqual(
        nr.changes.map((c) => [c.policy, c.new.slice(c.new.lastIndexOf(':') + 1)]),
        [['flux-system/app-0', '1.3.0']],
      );
      gitAgain = subcommands((await readFile(gitLog, 'utf8')).split('\n').slice(from, -1));
    }
    return {
      store: calls,
      rows,
      facts,
      ...(outcomes ? { evaluated: unchanged + 1 - (outcomes.counts.reused - reusedBefore) } : {}),
      git: subcommands(lines),
      ...(gitAgain ? { gitAgain } : {}),
    };
  } finally {
    await raw.close();
  }
}

test('a webhook pass makes as many store calls and git processes among 100 unchanged images as among 10', async () => {
  const small = await countPass(10);
  const large = await countPass(100);
  assert.ok(small.git.length > 0 && Object.keys(small.store).length > 0, 'something was counted');
  assert.deepEqual(large.store, small.store, 'store calls by method: 100 unchanged images against 10');
  assert.deepEqual(large.git, small.git, 'git processes in order: 100 unchanged images against 10');
  // `pawl run` keeps no outcomes: it evaluates every policy, each with its repository's facts.
  assert.deepEqual([small.facts, large.facts], [11, 101]);
  // The whole budget of a committing pass on a fetched workspace, in order: on a busy machine each
  // process costs tens of milliseconds of a webhook's latency (docs/performance.md), so one more
  // is a change to make on purpose, here.
  assert.deepEqual(small.git, [
    // (the workspace is whole and points at the remote: read from its config, repair.ts)
    'fetch',
    'checkout', // -B the branch at the fetched head; its ref file then gives the sha
    'clean',
    'log', // -L: the marked lines' last changes, for the guard
    'ls-files', // the index's blobs of the changed files (fast-commit.ts)
    'interpret-trailers', // the message's trailers, once per message (commit.ts keeps the answer)
    'fast-import', // moves the checked-out branch itself, as a fast-forward only
    'update-index',
    'push', // HEAD is the one fast-import set: no rev-parse before it
  ]);
});

test("a daemon's next webhook pass, at its own last commit, neither checks out nor asks git the tree's entries or the line's history", async () => {
  const counts = await countPass(10, 'daemon', true);
  // The remote is at the commit the last pass made and pushed: the changed file's entry and the
  // marked line's last change (that commit) are known to the process (src/git/known.ts), so no
  // ls-files and no log -L; and that pass left the workspace clean at it, so no checkout and no
  // clean. A remote that moved checks out another commit, and git is asked
  // (test/git/known.test.ts, test/git/left-clean.test.ts).
  assert.deepEqual(counts.gitAgain, ['fetch', 'fast-import', 'update-index', 'push']);
});

test("the daemon's webhook pass evaluates, reads and writes the changed image's policy alone", async () => {
  const small = await countPass(10, 'daemon');
  const large = await countPass(100, 'daemon');
  assert.equal(small.evaluated, 1, "the changed image's policy alone is evaluated among 10");
  assert.equal(large.evaluated, 1, "the changed image's policy alone is evaluated among 100");
  // The kept outcomes of the unchanged images are taken as they are: the pass makes facts of the
  // changed image's repository alone, where `pawl run` makes them of every repository it evaluates.
  assert.equal(small.facts, 1, "facts of the changed image's repository alone, among 10");
  assert.equal(large.facts, 1, "facts of the changed image's repository alone, among 100");
  assert.deepEqual(large.store, small.store, 'store calls by method: 100 unchanged images against 10');
  assert.deepEqual(large.git, small.git, 'git processes in order: 100 unchanged images against 10');
  // One policy's state read and written, one repository's tags read, one selection recorded; the
  // batch still names every marker's decision (the latest run's record), and the store keeps as
  // rows those that differ from the run's base (docs/store.md, "Carried decisions";
  // test/store/carried.ts counts them).
  const { 'write.decisions': smallDecisions, ...smallRows } = small.rows;
  const { 'write.decisions': largeDecisions, ...largeRows } = large.rows;
  assert.deepEqual(largeRows, smallRows, 'rows by kind: 100 unchanged images against 10');
  assert.equal(small.rows.policyStates, 1);
  assert.equal(small.rows['write.policyStates'], 1);
  assert.equal(small.rows['write.selections'], 1);
  assert.deepEqual([smallDecisions, largeDecisions], [11, 101]);
});
