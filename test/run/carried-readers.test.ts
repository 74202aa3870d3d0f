/**
 * Carried decisions through the readers (docs/store.md, "Carried decisions"): the daemon's passes
 * — a first pass, webhook passes that each move one image, an unchanged one, one in which two
 * images move — written to a SQLite and a PostgreSQL store that carry decisions, and to a SQLite
 * store written as before (every decision a row, the result as reported: each batch split so
 * that no run's decisions and end arrive together). After each pass every reader that reads
 * decisions or runs answers the same from all three: `pawl get`'s rows, the dashboard's overview
 * and timelines, `pawl explain`, every run's record, the newest 5,000 decisions. The carrying
 * stores hold fewer decision rows (what the change is for).
 */
import { strict as assert } from 'node:assert';
import Database from 'better-sqlite3';
import { after, before, test } from 'node:test';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/index.js';
import { rowsFromStore } from '../../src/cli/get-rows.js';
import { directScans, explain, OutcomeCache, runPass } from '../../src/run/index.js';
import { createScanClients } from '../../src/scan/index.js';
import { overview, timeline, type DashboardSource } from '../../src/serve/dashboard/index.js';
import { openSqliteStore, type Store, type StoreWrite } from '../../src/store/index.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { silentLogger } from '../../src/util/log.js';
import { startGitServer, type GitServer } from '../helpers/git-server.js';
import { postgresUnavailable, startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { pushImage, seedTags } from '../helpers/push.js';
import { startRegistry, type TestRegistry } from '../helpers/registry.js';
import { GIT_PASSWORD, GIT_USER } from '../helpers/world.js';

const unavailable = postgresUnavailable();
const skip = process.env.CI === 'true' ? false : (unavailable ?? false);

let registry: TestRegistry;
let git: GitServer;
let pgServer: TestPostgres;
let base: string;

before(async () => {
  if (unavailable && process.env.CI === 'true') throw new Error(`CI needs PostgreSQL: ${unavailable}`);
  if (unavailable) return;
  registry = await startRegistry({ auth: 'none' });
  git = await startGitServer({ users: { [GIT_USER]: GIT_PASSWORD } });
  pgServer = await startPostgres();
  base = await mkdtemp(join(tmpdir(), 'pawl-carried-readers-'));
});

after(async () => {
  await git?.close();
  await registry?.stop();
  await pgServer?.close();
  if (base) await rm(base, { recursive: true, force: true });
});

/** The reference's write: no batch holds a run's decisions and its end together (nothing carried). */
function asBefore(batch: StoreWrite): StoreWrite[] {
  const { finishRun, ...rest } = batch;
  return finishRun ? [rest, { finishRun }] : [batch];
}

/**
 * One store to the pass, three underneath: reads from the first, every write to all three (the
 * reference's split); runs are begun one at a time, so each has the same id in all three.
 */
function tee(stores: readonly Store[], reference: Store): Store {
  const all = [...stores, reference];
  const [first] = stores as [Store];
  const writes = new Set(['beginScan', 'finishScan', 'beginRun', 'write']);
  const scanIds = new Map<number, number[]>();
  let queue: Promise<unknown[]> = Promise.resolve([]);
  return new Proxy(first, {
    get(target, key, receiver) {
      const v: unknown = Reflect.get(target, key, receiver);
      if (typeof v !== 'function' || typeof key !== 'string') return v;
      if (key === 'buildTimeCache' || key === 'verifiedCache') {
        const caches = all.map((s) => (s[key] as () => { get: unknown; set: unknown })());
        return () => ({
          get: (...a: unknown[]) => (caches[0]!.get as (...x: unknown[]) => unknown)(...a),
          set: async (...a: unknown[]) => {
            for (const c of caches) await (c.set as (...x: unknown[]) => Promise<void>)(...a);
          },
        });
      }
      if (!writes.has(key)) return (v as (...a: unknown[]) => unknown).bind(target);
      return async (...args: unknown[]) => {
        if (key === 'write') {
          const batch = args[0] as StoreWrite;
          for (const s of stores) await s.write(batch);
          for (const b of asBefore(batch)) await reference.write(b);
          return;
        }
        // Scans run eight at once: each store is told its own id (the same, as begun below).
        if (key === 'finishScan') {
          const [id, ...rest] = args as [number, ...unknown[]];
          const ids = scanIds.get(id)!;
          const answers = await Promise.all(
            all.map((s, i) => s.finishScan(ids[i]!, ...(rest as [never, never]))),
          );
          return answers[0];
        }
        const each = async () => {
          const answers: unknown[] = [];
          for (const s of all)
            answers.push(await (Reflect.get(s, key) as (...a: unknown[]) => Promise<unknown>).apply(s, args));
          return answers;
        };
        if (key === 'beginScan') {
          // One scan begun in all three before the next: the same ids (the timelines show them).
          const begun = queue.then(each);
          queue = begun.catch(() => []);
          const answers = await begun;
          scanIds.set(answers[0] as number, answers as number[]);
          return answers[0];
        }
        const answers = await each();
        assert.deepEqual(
          answers,
          answers.map(() => answers[0]),
          `${key}: the same run id from every store`,
        );
        return answers[0];
      };
    },
  });
}

test(
  "the daemon's passes read back the same from carrying stores as from one that writes every row",
  { skip },
  async () => {
    const images = Array.from({ length: 12 }, (_, i) => `carried/app-${i}`);
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
    await git.createBareRepo('carried', files);
    const configDir = join(base, 'config');
    const stateDir = join(base, 'state');
    await mkdir(configDir, { recursive: true });
    const docs = [
      `apiVersion: v1\nkind: Secret\nmetadata:\n  name: git-credentials\n  namespace: flux-system\ntype: kubernetes.io/basic-auth\nstringData:\n  username: ${GIT_USER}\n  password: ${GIT_PASSWORD}\n`,
      `apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: fleet\n  namespace: flux-system\nspec:\n  interval: 1h\n  url: ${git.cloneUrl('carried')}\n  ref:\n    branch: main\n  secretRef:\n    name: git-credentials\n`,
      `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n  name: fleet\n  namespace: flux-system\nspec:\n  interval: 1h\n  sourceRef:\n    kind: GitRepository\n    name: fleet\n  git:\n    commit:\n      author:\n        name: pawl\n        email: pawl@example.com\n  update:\n    path: ./apps\n    strategy: Setters\n`,
      ...images.map(
        (image, i) =>
          `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n  name: app-${i}\n  namespace: flux-system\nspec:\n  image: ${registry.host}/${image}\n  interval: 1h\n  insecure: true\n---\n` +
          `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: app-${i}\n  namespace: flux-system\nspec:\n  imageRepositoryRef:\n    name: app-${i}\n  policy:\n    semver:\n      range: ">=1.0.0"\n`,
      ),
    ];
    await writeFile(join(configDir, 'objects.yaml'), docs.join('---\n'));
    const { config } = await loadConfig([configDir]);

    const sqlite = openSqliteStore(join(base, 'carried-sqlite'));
    const pg = await openPostgresStore({ url: await pgServer.createDatabase('carried'), schema: 'pawl' });
    const reference = openSqliteStore(join(base, 'reference'));
    try {
      const store = tee([sqlite, pg], reference);
      const clients = createScanClients(config, { log: silentLogger, buildTimes: store.buildTimeCache() });
      const outcomes = new OutcomeCache();
      const deps = {
        config,
        store,
        stateDir,
        clients,
        log: silentLogger,
        scans: directScans({ clients, store, log: silentLogger }),
        outcomes,
      };
      const now = new Date();
      const repositoriesOf = new Map([['flux-system/fleet', images.map((_, i) => `flux-system/app-${i}`)]]);
      /** Everything the readers answer from one store. */
      const read = async (s: Store) => {
        await s.flush();
        const src: DashboardSource = {
          config,
          store: s,
          dryRun: false,
          lastPass: new Map(),
          repositoriesOf,
          now,
        };
        const runs = [...new Set((await s.decisions({ limit: 5000 })).map((d) => d.runId))];
        return {
          get: await rowsFromStore(config, s),
          overview: await overview(src),
          timelines: await Promise.all(
            ['flux-system/app-0', 'flux-system/app-5'].map((r) => timeline(src, r, 50)),
          ),
          explain: await Promise.all(
            [0, 5].map((i) =>
              explain(
                { config, store: s, stateDir, clients, log: silentLogger, now: () => now },
                config.imagePolicies.get(`flux-system/app-${i}`)!,
              ),
            ),
          ),
          decisions: await s.decisions({ limit: 5000 }),
          policyDecisions: await s.decisions({ policy: 'flux-system/app-0', limit: 3 }),
          runs: await Promise.all(runs.map((id) => s.getRun(id))),
        };
      };
      const compare = async (when: string) => {
        const want = await read(reference);
        assert.ok(want.decisions.length > 0, when);
        assert.deepEqual(await read(sqlite), want, `${when}: SQLite carrying against the reference`);
        assert.deepEqual(await read(pg), want, `${when}: PostgreSQL carrying against the reference`);
      };
      const rows = async () => ({
        sqlite: (await sqlite.decisions({ limit: 1 }))[0]?.id,
        reference: (await reference.decisions({ limit: 1 }))[0]?.id,
      });

      const first = await runPass(deps);
      assert.deepEqual(
        first.automations.map((a) => a.result),
        ['up-to-date'],
      );
      await compare('the first pass');
      let version = 2;
      const move = async (indexes: number[]) => {
        for (const i of indexes)
          await pushImage(registry.url, images[i]!, `1.${version}.0`, {
            created: new Date(Date.UTC(2024, 1, version)),
          });
        version++;
        const r = await runPass(deps, {
          rescan: { repositories: new Set(indexes.map((i) => `flux-system/app-${i}`)), since: Date.now() },
        });
        assert.equal(
          r.automations[0]?.result,
          'pushed',
          JSON.stringify(r.repositories.filter((x) => x.error)),
        );
      };
      for (const [k, indexes] of [[0], [5], [0], [3, 7], [0], [11], [5], [0]].entries()) {
        await move(indexes);
        await compare(`webhook pass ${k + 1}`);
      }
      const quiet = await runPass(deps, {
        rescan: { repositories: new Set(['flux-system/app-2']), since: Date.now() },
      });
      assert.equal(quiet.automations[0]?.result, 'up-to-date');
      await compare('an unchanged pass');
      // The same decisions (the same ids, every reader above) from fewer rows: 10 passes of 12
      // markers are 120 decisions; the carrying stores hold the first pass's 12 and those that
      // changed since their last whole run.
      const ids = await rows();
      assert.equal(ids.sqlite, ids.reference, 'the newest decision has the same id');
      await sqlite.flush();
      await reference.flush();
      const count = (file: string) => {
        const db = new Database(join(base, file, 'pawl.db'), { readonly: true });
        try {
          return (db.prepare('SELECT count(*) AS n FROM decisions').get() as { n: number }).n;
        } finally {
          db.close();
        }
      };
      const pgRows = Number(
        (await pg.pool.query<{ n: string }>('SELECT count(*) AS n FROM pawl.decisions')).rows[0]!.n,
      );
      assert.equal(count('reference'), 12 * 10, 'the reference: every decision a row');
      assert.ok(count('carried-sqlite') < 12 * 4, `SQLite carrying holds ${count('carried-sqlite')} rows`);
      assert.equal(pgRows, count('carried-sqlite'), 'PostgreSQL carries as SQLite does');
    } finally {
      await sqlite.close();
      await pg.close();
      await reference.close();
    }
  },
);
