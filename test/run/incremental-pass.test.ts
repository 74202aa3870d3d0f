/**
 * The daemon's kept outcomes (src/run/outcome-cache.ts) and kept marker parses
 * (src/write/setters/tree.ts) are never stale (issue 27): after a new scan, a failed scan, a
 * changed policy spec, a changed Secret, a registry that lost a tag the outcome rested on, or a
 * person's edit in the tree, a pass with the cache gives what a pass without it gives. Each test
 * fails when the invalidation it names is removed (scripts/mutations-serve.ts, area
 * `incremental-pass`).
 *
 * runPass is driven as the daemon drives it (src/serve/jobs/automation.ts): one OutcomeCache and
 * one SecretPrints for every pass, `rescan` naming the webhook's repository.
 */
import { strict as assert } from 'node:assert';
import { after, before, test } from 'node:test';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type Config } from '../../src/config/index.js';
import { directScans, OutcomeCache, runPass, SecretPrints, type RunReport } from '../../src/run/index.js';
import { createScanClients } from '../../src/scan/index.js';
import { openSqliteStore, type Store } from '../../src/store/index.js';
import { silentLogger } from '../../src/util/log.js';
import { reusedScans } from '../../src/write/index.js';
import { startGitServer, type GitServer } from '../helpers/git-server.js';
import { pushImage, seedTags } from '../helpers/push.js';
import { startRegistry, type TestRegistry } from '../helpers/registry.js';
import { startRegistryProxy, type RegistryProxy } from '../helpers/registry-proxy.js';
import { GIT_PASSWORD, GIT_USER } from '../helpers/world.js';

let registry: TestRegistry;
let proxy: RegistryProxy;
let git: GitServer;
let base: string;

before(async () => {
  registry = await startRegistry({ auth: 'none' });
  proxy = await startRegistryProxy(registry.url);
  git = await startGitServer({ users: { [GIT_USER]: GIT_PASSWORD } });
  base = await mkdtemp(join(tmpdir(), 'pawl-incremental-'));
});

after(async () => {
  await git?.close();
  await proxy?.stop();
  await registry?.stop();
  await rm(base, { recursive: true, force: true });
});

const IMAGES = 3;

interface World {
  name: string;
  image: (i: number) => string;
  configDir: string;
  /** A pass as the daemon runs it; `rescan`: the repositories (`app-N`) a webhook named. */
  pass(rescan?: number[]): Promise<RunReport>;
  /** Loads the configuration again (after `writeObjects`): new objects, as a reload makes. */
  reload(): Promise<void>;
  writeObjects(opts?: {
    range?: (i: number) => string;
    secret?: string;
    /** Lines of `spec.guard` for policy app-N. */
    guard?: (i: number) => string | undefined;
  }): Promise<void>;
  /** Moves the passes' clock on (scans keep the real one). */
  advance(ms: number): void;
  /** A daemon started again: its cache is empty. */
  restart(): void;
  cache(): OutcomeCache;
  close(): Promise<void>;
}

/** `IMAGES` images, each with 1.0.0 and 1.1.0, their markers at 1.1.0, one automation over them. */
async function world(name: string): Promise<World> {
  const image = (i: number) => `${name}/app-${i}`;
  for (let i = 0; i < IMAGES; i++) {
    const { digest } = await pushImage(registry.url, image(i), '1.0.0', {
      created: new Date(Date.UTC(2024, 0, 1, 0, 0, i)),
    });
    await seedTags(registry.storageDir, image(i), ['1.1.0'], digest);
  }
  const files: Record<string, string> = {};
  for (let i = 0; i < IMAGES; i++) files[`apps/app-${i}.yaml`] = manifest(proxy.host, image(i), '1.1.0', i);
  await git.createBareRepo(name, files);
  const configDir = join(base, name, 'config');
  const stateDir = join(base, name, 'state');
  await mkdir(configDir, { recursive: true });
  const writeObjects: World['writeObjects'] = async (opts = {}) => {
    const docs = [
      `apiVersion: v1\nkind: Secret\nmetadata:\n  name: git-credentials\n  namespace: flux-system\ntype: kubernetes.io/basic-auth\nstringData:\n  username: ${GIT_USER}\n  password: ${GIT_PASSWORD}\n`,
      `apiVersion: v1\nkind: Secret\nmetadata:\n  name: registry\n  namespace: flux-system\ntype: kubernetes.io/basic-auth\nstringData:\n  username: someone\n  password: ${opts.secret ?? 'first'}\n`,
      `apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: fleet\n  namespace: flux-system\nspec:\n  interval: 1h\n  url: ${git.cloneUrl(name)}\n  ref:\n    branch: main\n  secretRef:\n    name: git-credentials\n`,
      `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n  name: fleet-${name}\n  namespace: flux-system\nspec:\n  interval: 1h\n  sourceRef:\n    kind: GitRepository\n    name: fleet\n  git:\n    commit:\n      author:\n        name: pawl\n        email: pawl@example.com\n  update:\n    path: ./apps\n    strategy: Setters\n`,
    ];
    for (let i = 0; i < IMAGES; i++)
      docs.push(
        // app-2's repository names a Secret (the registry asks for none): a changed Secret is a
        // reason to scan it again.
        `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n  name: app-${i}\n  namespace: flux-system\nspec:\n  image: ${proxy.host}/${image(i)}\n  interval: 1h\n  insecure: true\n${i === 2 ? '  secretRef:\n    name: registry\n' : ''}`,
        `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: app-${i}\n  namespace: flux-system\nspec:\n  imageRepositoryRef:\n    name: app-${i}\n  policy:\n    semver:\n      range: "${opts.range?.(i) ?? '>=1.0.0'}"\n${opts.guard?.(i) ? `  guard:\n    ${opts.guard(i)}\n` : ''}`,
      );
    await writeFile(join(configDir, 'objects.yaml'), docs.join('---\n'));
  };
  await writeObjects();
  let config: Config = (await loadConfig([configDir])).config;
  let cache = new OutcomeCache();
  let prints = new SecretPrints(stateDir);
  let offset = 0;
  const store: Store = openSqliteStore(stateDir);
  const pass: World['pass'] = (rescan = []) => {
    const clients = createScanClients(config, { log: silentLogger, buildTimes: store.buildTimeCache() });
    return runPass(
      {
        config,
        store,
        stateDir,
        clients,
        log: silentLogger,
        now: () => new Date(Date.now() + offset),
        scans: directScans({ clients, store, log: silentLogger }),
        outcomes: cache,
        prints,
      },
      {
        automations: [...config.automations.values()],
        rescan: { repositories: new Set(rescan.map((i) => `flux-system/app-${i}`)), since: Date.now() },
      },
    );
  };
  return {
    name,
    image,
    configDir,
    pass,
    reload: async () => {
      config = (await loadConfig([configDir])).config;
    },
    writeObjects,
    advance: (ms) => {
      offset += ms;
    },
    restart: () => {
      cache = new OutcomeCache();
      prints = new SecretPrints(stateDir);
    },
    cache: () => cache,
    close: () => store.close(),
  };
}

function manifest(host: string, image: string, tag: string, i: number): string {
  return (
    `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-${i}\nspec:\n  template:\n    spec:\n      containers:\n` +
    `        - name: app\n          image: ${host}/${image}:${tag} # {"$imagepolicy": "flux-system:app-${i}"}\n`
  );
}

/** Each policy's candidate (or error), and each marker's reason, of a pass. */
function outcomeOf(r: RunReport): { policies: Record<string, string>; markers: Record<string, string> } {
  const policies: Record<string, string> = {};
  for (const p of r.policies) policies[p.name.split('/')[1]!] = p.candidate ?? `none: ${p.error ?? ''}`;
  const markers: Record<string, string> = {};
  for (const a of r.automations) {
    assert.equal(a.error, null, `automation ${a.name}: ${a.error ?? ''}`);
    for (const c of a.changes) markers[c.policy.split('/')[1]!] = `${c.reason} ${c.new.split(':').pop()!}`;
    for (const k of a.kept) markers[k.policy.split('/')[1]!] = `${k.reason} ${k.current.split(':').pop()!}`;
  }
  return { policies, markers };
}

const steady = {
  policies: { 'app-0': '1.1.0', 'app-1': '1.1.0', 'app-2': '1.1.0' },
  markers: { 'app-0': 'up-to-date 1.1.0', 'app-1': 'up-to-date 1.1.0', 'app-2': 'up-to-date 1.1.0' },
};

test('a pass reuses the unchanged policies, and a new scan of one is evaluated again', async () => {
  const w = await world('scan');
  try {
    assert.deepEqual(outcomeOf(await w.pass()), steady);
    const kept = w.cache().counts.kept;
    assert.equal(kept, IMAGES, 'every settled policy is kept');
    assert.deepEqual(outcomeOf(await w.pass([0])), steady);
    // The webhook's repository was scanned again: its policy alone was evaluated.
    assert.equal(w.cache().counts.reused, IMAGES - 1);
    assert.equal(w.cache().counts.kept, kept + 1);

    // app-1 has a new tag, but no scan saw it yet: what the uncached pass says too.
    await pushImage(registry.url, w.image(1), '1.2.0', { created: new Date(Date.UTC(2024, 1, 1)) });
    assert.deepEqual(outcomeOf(await w.pass([0])), steady);
    // Its scan: the kept outcome is not used (the scan ids differ).
    const r = outcomeOf(await w.pass([1]));
    assert.equal(r.policies['app-1'], '1.2.0');
    assert.equal(r.markers['app-1'], 'upgrade 1.2.0');
    // A restarted daemon (cold cache) agrees with the warm one.
    w.restart();
    const cold = outcomeOf(await w.pass());
    assert.equal(cold.policies['app-1'], '1.2.0');
    assert.equal(cold.markers['app-1'], 'up-to-date 1.2.0');
    assert.equal(w.cache().counts.reused, 0);
  } finally {
    await w.close();
  }
});

test('a failed scan is not covered by the outcome of the good scan before it', async () => {
  const w = await world('failed');
  try {
    await w.pass();
    await w.pass([0]);
    proxy.addFault({ kind: 'tags', repo: w.image(1), times: Infinity, action: { status: 404 } });
    let r: ReturnType<typeof outcomeOf>;
    try {
      r = outcomeOf(await w.pass([1]));
    } finally {
      proxy.clearFaults();
    }
    assert.match(r.policies['app-1']!, /^none: the last scan of ImageRepository flux-system\/app-1 failed/);
    assert.equal(r.markers['app-1'], 'no-candidate 1.1.0');
    assert.equal(r.policies['app-0'], '1.1.0');
  } finally {
    await w.close();
  }
});

test('a changed policy spec is evaluated again; a reload of the same specs is not', async () => {
  const w = await world('spec');
  try {
    await w.pass();
    await w.reload();
    const reused = w.cache().counts.reused;
    assert.deepEqual(outcomeOf(await w.pass()), steady);
    assert.equal(w.cache().counts.reused, reused + IMAGES, 'the same specs under new objects are reused');

    // app-1 may only select below 1.1.0 now: its high-water mark is reset, and the marker kept.
    await w.writeObjects({ range: (i) => (i === 1 ? '<1.1.0' : '>=1.0.0') });
    await w.reload();
    const r = outcomeOf(await w.pass());
    assert.equal(r.policies['app-1'], '1.0.0');
    assert.equal(r.markers['app-1'], 'downgrade-blocked 1.1.0');
    assert.equal(r.policies['app-0'], '1.1.0');
  } finally {
    await w.close();
  }
});

test('a changed Secret scans its repository again, and its policy is evaluated on that scan', async () => {
  const w = await world('secret');
  try {
    await w.pass();
    await w.pass([0]);
    // A new tag, then a changed Secret: the pass scans app-2 again although no webhook named it.
    await pushImage(registry.url, w.image(2), '1.3.0', { created: new Date(Date.UTC(2024, 2, 1)) });
    await w.writeObjects({ secret: 'second' });
    await w.reload();
    const report = await w.pass([0]);
    assert.deepEqual(
      report.repositories.filter((x) => x.scanned).map((x) => x.name),
      ['flux-system/app-0', 'flux-system/app-2'],
    );
    const r = outcomeOf(report);
    assert.equal(r.policies['app-2'], '1.3.0');
    assert.equal(r.markers['app-2'], 'upgrade 1.3.0');
  } finally {
    await w.close();
  }
});

test('a Secret changed while the daemon was down scans its repository at the first pass after the start', async () => {
  const w = await world('secret-restart');
  try {
    await w.pass();
    w.restart();
    await pushImage(registry.url, w.image(2), '1.3.0', { created: new Date(Date.UTC(2024, 2, 1)) });
    await w.writeObjects({ secret: 'second' });
    await w.reload();
    const report = await w.pass();
    assert.deepEqual(
      report.repositories.filter((x) => x.scanned).map((x) => x.name),
      ['flux-system/app-2'],
    );
    assert.equal(outcomeOf(report).policies['app-2'], '1.3.0');
  } finally {
    await w.close();
  }
});

test('an outcome that rested on a HEAD is asked again: the high-water mark gone from the registry', async () => {
  const w = await world('stale');
  try {
    await w.pass();
    // A stale list: 1.1.0 (the high-water mark) is missing from it but still in the registry.
    proxy.setTagList(w.image(1), ['1.0.0']);
    try {
      const r = outcomeOf(await w.pass([1]));
      assert.equal(r.policies['app-1'], '1.1.0', 'the ratchet keeps H while it exists');
      // The registry loses 1.1.0; no scan of app-1 follows, but a pass does (another webhook):
      // the pass without a cache asks for H again and finds it gone.
      proxy.setMissingManifests(w.image(1), ['1.1.0']);
      const after = outcomeOf(await w.pass([0]));
      assert.match(after.policies['app-1']!, /^none: 1\.0\.0 is older than the high-water mark 1\.1\.0/);
      assert.equal(after.markers['app-1'], 'no-candidate 1.1.0');
    } finally {
      proxy.setTagList(w.image(1), null);
      proxy.setMissingManifests(w.image(1), []);
    }
  } finally {
    await w.close();
  }
});

test("a person's edit in the tree is read: the markers' parse is kept by the file's text", async () => {
  const w = await world('edit');
  try {
    await w.pass();
    await w.pass([0]);
    // A person rolls app-1 back to 1.0.0: the line is pinned there.
    await git.commitFiles(
      w.name,
      'main',
      { 'apps/app-1.yaml': manifest(proxy.host, w.image(1), '1.0.0', 1) },
      { message: 'roll app-1 back', author: { name: 'A Person', email: 'person@example.com' } },
    );
    const r = outcomeOf(await w.pass([0]));
    assert.equal(r.policies['app-1'], '1.1.0');
    assert.equal(r.markers['app-1'], 'pinned 1.0.0');
    assert.equal(r.markers['app-0'], 'up-to-date 1.1.0');
  } finally {
    await w.close();
  }
});

test("the tree a daemon's last pass left is not read again, and what that pass wrote is in its kept scan", async () => {
  const w = await world('kept-scan');
  try {
    await w.pass();
    await w.pass([0]);
    // app-0 moves twice; the second pass starts at the first one's own commit, the workspace as
    // it left it: the kept scan answers, with the file that pass rewrote read again.
    await pushImage(registry.url, w.image(0), '1.2.0', { created: new Date(Date.UTC(2024, 1, 1)) });
    assert.equal(outcomeOf(await w.pass([0])).markers['app-0'], 'upgrade 1.2.0');
    await pushImage(registry.url, w.image(0), '1.3.0', { created: new Date(Date.UTC(2024, 2, 1)) });
    let reused = reusedScans();
    assert.deepEqual(outcomeOf(await w.pass([0])).markers, {
      'app-0': 'upgrade 1.3.0',
      'app-1': 'up-to-date 1.1.0',
      'app-2': 'up-to-date 1.1.0',
    });
    assert.equal(reusedScans(), reused + 1, 'the pass at its own last commit read no file');
    assert.equal(
      await git.show(w.name, 'main', 'apps/app-0.yaml'),
      manifest(proxy.host, w.image(0), '1.3.0', 0),
    );
    // Another writer pushes while the pass, which started untouched, pushes: its retry checks
    // out the new remote head and reads that tree, not the one the pass started from.
    let raced = false;
    git.beforePush(w.name, async () => {
      if (raced) return;
      raced = true;
      await git.commitFiles(
        w.name,
        'main',
        { 'apps/app-1.yaml': manifest(proxy.host, w.image(1), '1.0.0', 1) },
        { message: 'roll app-1 back', author: { name: 'A Person', email: 'person@example.com' } },
      );
    });
    await pushImage(registry.url, w.image(0), '1.4.0', { created: new Date(Date.UTC(2024, 3, 1)) });
    reused = reusedScans();
    const racing = outcomeOf(await w.pass([0])).markers;
    git.beforePush(w.name, null);
    assert.ok(raced, 'the other writer pushed');
    assert.equal(reusedScans(), reused + 1, "the first attempt's tree was untouched");
    assert.deepEqual([racing['app-0'], racing['app-1']], ['upgrade 1.4.0', 'pinned 1.0.0']);
    // A person's commit moves the remote: the checkout runs, and the tree is read.
    await git.commitFiles(
      w.name,
      'main',
      { 'apps/app-2.yaml': manifest(proxy.host, w.image(2), '1.0.0', 2) },
      { message: 'roll app-2 back', author: { name: 'A Person', email: 'person@example.com' } },
    );
    reused = reusedScans();
    assert.equal(outcomeOf(await w.pass([0])).markers['app-2'], 'pinned 1.0.0');
    assert.equal(reusedScans(), reused, 'a moved remote: the tree was read');
  } finally {
    await w.close();
  }
});

test('an outcome held by the clock (guard.minimumAge) is evaluated again each pass', async () => {
  const w = await world('age');
  try {
    await w.writeObjects({ guard: (i) => (i === 1 ? 'minimumAge: 30m' : undefined) });
    await w.reload();
    await w.pass();
    await pushImage(registry.url, w.image(1), '1.2.0', { created: new Date(Date.UTC(2024, 1, 1)) });
    const held = outcomeOf(await w.pass([1]));
    assert.equal(held.policies['app-1'], '1.2.0');
    assert.equal(held.markers['app-1'], 'too-new 1.1.0');
    // 45 minutes on (repositories scan hourly: none is due), another repository's webhook: the
    // candidate is old enough now.
    w.advance(45 * 60_000);
    const later = await w.pass([0]);
    assert.deepEqual(
      later.repositories.filter((x) => x.scanned).map((x) => x.name),
      ['flux-system/app-0'],
    );
    assert.equal(outcomeOf(later).markers['app-1'], 'upgrade 1.2.0');
  } finally {
    await w.close();
  }
});
