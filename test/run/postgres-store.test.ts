/**
 * `--store postgres://…` through the real CLI (docs/store.md): a pass against the real registry
 * and git server gives the same commit and decisions as SQLite; the password never appears on
 * the command line, in errors or in logs; an unreachable or refusing server is one clear line;
 * and the guard's high-water mark (SPEC §4) lives in PostgreSQL, across runs and the loss of
 * the local state directory.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deleteManifest, pushTags } from '../helpers/push.js';
import { freePort } from '../helpers/registry.js';
import { runGit } from '../helpers/git-server.js';
import { postgresUnavailable, startPostgres, type TestPostgres } from '../helpers/postgres.js';
import {
  gitObjects,
  imageObjects,
  runCli,
  startWorld,
  type CliResult,
  type World,
} from '../helpers/world.js';
import type { DecisionRecord } from '../../src/records/index.js';
import { openPostgresStore, openSqliteStore, type Store } from '../../src/store/index.js';
import type { RunReport } from '../../src/run/report.js';

const unavailable = postgresUnavailable();
const skip = process.env.CI === 'true' ? false : (unavailable ?? false);

let pgServer: TestPostgres;
let scratch: string;
before(async () => {
  if (unavailable) {
    if (process.env.CI === 'true') throw new Error(`CI needs the PostgreSQL suite: ${unavailable}`);
    return;
  }
  pgServer = await startPostgres();
  scratch = await mkdtemp(join(tmpdir(), 'pawl-pgcli-'));
});
after(async () => {
  await pgServer?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** `pawl ARGS -c CONFIG --state-dir DIR` with the store in PostgreSQL database `db`. */
function pawlPg(w: World, db: string, args: string[], stateDir: string): Promise<CliResult> {
  const url = `postgres://${pgServer.user}@${pgServer.host}:${pgServer.port}/${db}`;
  return runCli([...args, '-c', w.configDir, '--state-dir', stateDir, '--store', url], {
    env: { PAWL_STORE_PASSWORD: pgServer.password },
  });
}

function json<T>(r: CliResult): T {
  try {
    return JSON.parse(r.stdout) as T;
  } catch {
    throw new Error(`no JSON (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
  }
}

const same = (ds: DecisionRecord[]) =>
  ds.map(({ id: _id, runId: _run, at: _at, ...d }) => d).sort((a, b) => a.line - b.line);

const deploy = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    spec:
      containers:
        - name: app
          image: {{REGISTRY}}/team/app:1.0.0 # {"$imagepolicy": "flux-system:app"}
        - name: sidecar
          image: {{REGISTRY}}/team/app:1.0.0 # {"$imagepolicy": "flux-system:pinned"}
`;

const POLICIES =
  imageObjects('app', '{{REGISTRY}}/team/app', 'semver:\n  range: ">=1.0.0"') +
  '---\n' +
  imageObjects('pinned', '{{REGISTRY}}/team/app', 'semver:\n  range: "~1.0.0"');

describe('pawl run --store postgres://', { skip }, () => {
  let w: World;
  before(async () => {
    w = await startWorld({
      files: { 'deploy.yaml': deploy },
      config: { 'git.yaml': gitObjects(), 'app.yaml': POLICIES },
    });
    await pushTags(w.registry.url, 'team/app', ['1.0.0', '1.0.1', '1.1.0']);
  });
  after(() => w?.close());

  test('the same commit and the same decisions as with SQLite', async () => {
    const start = (await w.git.revParse(w.repoName, 'main'))!;
    const withSqlite = await w.pawlJson<RunReport>(['run']);
    assert.equal(withSqlite.code, 0, withSqlite.stderr);
    assert.equal(withSqlite.json.automations[0]!.result, 'pushed');
    const c1 = (await w.git.revParse(w.repoName, 'main'))!;

    // The same repository again, as it was, and a fresh state directory: only the store differs.
    await runGit(['update-ref', 'refs/heads/main', start], w.git.repoPath(w.repoName));
    await pgServer.createDatabase('same_commit');
    const pgState = join(scratch, 'same-commit');
    const withPg = await pawlPg(w, 'same_commit', ['run', '--json'], pgState);
    assert.equal(withPg.code, 0, withPg.stderr);
    const report = json<RunReport>(withPg);
    assert.equal(report.automations[0]!.result, 'pushed');
    const c2 = (await w.git.revParse(w.repoName, 'main'))!;
    assert.notEqual(c2, c1);
    assert.equal(
      await w.git.revParse(w.repoName, `${c2}^{tree}`),
      await w.git.revParse(w.repoName, `${c1}^{tree}`),
    );
    const [m1, m2] = await Promise.all([
      runGit(['log', '-1', '--format=%B', c1], w.git.repoPath(w.repoName)),
      runGit(['log', '-1', '--format=%B', c2], w.git.repoPath(w.repoName)),
    ]);
    assert.equal(m2, m1);
    assert.deepEqual(report.automations[0]!.changes, withSqlite.json.automations[0]!.changes);
    assert.deepEqual(report.policies, withSqlite.json.policies);

    const sqlite: Store = openSqliteStore(w.stateDir);
    const pg: Store = await openPostgresStore({
      url: `postgres://${pgServer.user}@${pgServer.host}:${pgServer.port}/same_commit`,
      password: pgServer.password,
    });
    try {
      const [d1, d2] = await Promise.all([sqlite.decisions(), pg.decisions()]);
      assert.equal(d2.length, 2);
      assert.deepEqual(same(d2), same(d1));
      assert.deepEqual(
        same(d2).map((d) => [d.policy, d.action, d.candidate]),
        [
          ['flux-system/app', 'write', `${w.registryHost}/team/app:1.1.0`],
          ['flux-system/pinned', 'write', `${w.registryHost}/team/app:1.0.1`],
        ],
      );
      const [s1, s2] = await Promise.all([
        sqlite.getPolicyState('flux-system/app'),
        pg.getPolicyState('flux-system/app'),
      ]);
      // The same ratchet state; only when it was reached differs.
      assert.deepEqual({ ...s2!, highWaterAt: null }, { ...s1!, highWaterAt: null });
      assert.equal(s2!.highWater, '1.1.0');
      assert.deepEqual(await pg.currentTags('flux-system/app'), ['1.0.0', '1.0.1', '1.1.0']);
    } finally {
      await sqlite.close();
      await pg.close();
    }
  });

  test('credentials: never on the command line, never printed', async () => {
    const pw = pgServer.password;
    const noPw = pgServer.urlWithoutPassword;
    const all = (r: CliResult) => r.stdout + r.stderr;

    const inline = await runCli(['scan', '-c', w.configDir, '--store', pgServer.url]);
    assert.equal(inline.code, 2, all(inline));
    assert.match(inline.stderr, /password on the command line is refused/);
    assert.match(
      inline.stderr,
      /--store-password-file FILE or PAWL_STORE_PASSWORD, or put the whole URL in PAWL_STORE/,
    );
    assert.ok(!all(inline).includes(pw));

    const state = join(scratch, 'credentials');
    const viaEnvUrl = await runCli(
      ['scan', '-c', w.configDir, '--state-dir', state, '--log-level', 'debug'],
      {
        env: { PAWL_STORE: pgServer.url },
      },
    );
    assert.equal(viaEnvUrl.code, 0, all(viaEnvUrl));
    assert.ok(!all(viaEnvUrl).includes(pw));

    const file = join(scratch, 'pw');
    await writeFile(file, pw + '\n', { mode: 0o600 });
    const viaFile = await runCli(['tags', 'flux-system/app', '--store', noPw, '--store-password-file', file]);
    assert.equal(viaFile.code, 0, all(viaFile));
    assert.deepEqual(viaFile.stdout.trim().split('\n'), ['1.0.0', '1.0.1', '1.1.0']);

    const wrong = 'not-' + pw;
    const refused = await runCli(['tags', 'flux-system/app', '--store', noPw, '--log-level', 'debug'], {
      env: { PAWL_STORE_PASSWORD: wrong },
    });
    assert.equal(refused.code, 1, all(refused));
    assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);
    assert.match(
      refused.stderr,
      new RegExp(
        `^pawl: PostgreSQL at ${pgServer.host}:${pgServer.port}, database pawl refused pawl: .*password`,
      ),
    );
    assert.ok(!all(refused).includes(wrong) && !all(refused).includes(pw));

    const port = await freePort();
    const down = await runCli(
      ['tags', 'flux-system/app', '--store', `postgres://pawl@127.0.0.1:${port}/fleet`],
      {
        env: { PAWL_STORE_PASSWORD: pw },
      },
    );
    assert.equal(down.code, 1, all(down));
    assert.match(
      down.stderr,
      new RegExp(`^pawl: cannot connect to PostgreSQL at 127\\.0\\.0\\.1:${port}, database fleet: `),
    );
    assert.equal(down.stderr.trim().split('\n').length, 1, down.stderr);
    assert.ok(!all(down).includes(pw));

    const malformed = await runCli(['tags', 'x', '--store', 'postgres://pawl@[::1/fleet']);
    assert.equal(malformed.code, 2, all(malformed));
    assert.match(malformed.stderr, /not a valid PostgreSQL URL/);
    const unknown = await runCli(['tags', 'x', '--store', 'mysql://pawl@db/fleet']);
    assert.equal(unknown.code, 2, all(unknown));
    assert.match(unknown.stderr, /"mysql:\/\/" is not a store pawl knows/);
  });
});

const CURRENT = 'release-07ef7c53-1655866680';
const STALE = 'release-3caa31f4-1651535374';
const OLDER = 'release-11aa22bb-1650000000';

describe('the high-water mark lives in PostgreSQL (SPEC §4)', { skip }, () => {
  let w: World;
  before(async () => {
    w = await startWorld({
      proxy: true,
      files: {
        'deploy.yaml': `image: {{REGISTRY}}/shop/web:${CURRENT} # {"$imagepolicy": "flux-system:web"}\n`,
      },
      config: {
        'git.yaml': gitObjects(),
        'web.yaml': imageObjects('web', '{{REGISTRY}}/shop/web', 'numerical:\n  order: asc', {
          filterTags: "pattern: '^release-[a-f0-9]+-(?P<ts>[0-9]+)$'\nextract: '$ts'",
        }),
      },
    });
    // Distinct build times, so each tag is its own manifest and deleting one leaves the others.
    const pushed = await pushTags(w.registry.url, 'shop/web', [OLDER, STALE, CURRENT], {
      createdFor: (_t, i) => new Date(Date.UTC(2022, i * 2, 1)),
    });
    await deleteManifest(w.registry.url, 'shop/web', pushed.get(STALE)!.digest);
    await pgServer.createDatabase('ratchet');
  });
  after(() => w?.close());

  test('a stale list across runs, and the local state directory lost: nothing moves back', async () => {
    const state = join(scratch, 'ratchet');
    const first = await pawlPg(w, 'ratchet', ['run', '--json'], state);
    assert.equal(first.code, 0, first.stderr);
    assert.equal(json<RunReport>(first).policies[0]!.highWater, CURRENT, first.stdout);
    const commits = (await w.git.log(w.repoName, 'main')).length;

    w.proxy!.setTagList('shop/web', [OLDER, STALE]);
    for (let i = 0; i < 3; i++) {
      // The state directory holds only workspaces now: losing it loses nothing the guard needs.
      if (i === 1) await rm(state, { recursive: true, force: true });
      const r = await pawlPg(w, 'ratchet', ['run', '--refresh', '--json'], state);
      assert.equal(r.code, 0, r.stderr);
      const report = json<RunReport>(r);
      assert.equal(report.policies[0]!.highWater, CURRENT, `run ${i}`);
      assert.equal(report.policies[0]!.candidate, CURRENT, `run ${i}`);
      assert.deepEqual(report.automations[0]!.changes, [], `run ${i}`);
    }
    assert.equal((await w.git.log(w.repoName, 'main')).length, commits);
    assert.match(await w.git.show(w.repoName, 'main', 'deploy.yaml'), new RegExp(CURRENT));

    const pg = await openPostgresStore({
      url: `postgres://${pgServer.user}@${pgServer.host}:${pgServer.port}/ratchet`,
      password: pgServer.password,
    });
    try {
      assert.equal((await pg.getPolicyState('flux-system/web'))!.highWater, CURRENT);
      assert.ok((await pg.events({ kind: 'stale-scan' })).length >= 3);
      assert.equal((await pg.scanHistory('flux-system/web', 10)).length, 4);
    } finally {
      await pg.close();
    }
  });
});
