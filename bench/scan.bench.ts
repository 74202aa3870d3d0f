/**
 * Steady-state rescan: 50 repositories × 1,000 tags on Debian's real docker-registry, through
 * the paginating proxy (page size 100, so 10 pages a repository). A rescan must make exactly one
 * list request per page per repository (plus authentication, none here) and no manifest or blob
 * requests. Prints the time and the peak RSS.
 *
 * The 1,000 tags are pushed once to one repository; the other 49 are symbolic links to its
 * directory in the registry's filesystem storage, which the registry serves as separate
 * repositories. Pushing 50,000 tags would take minutes; linking takes milliseconds.
 */
import { mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRegistry } from '../test/helpers/registry.js';
import { startRegistryProxy } from '../test/helpers/registry-proxy.js';
import { pushTags } from '../test/helpers/push.js';
import type { ImageRepository } from '../src/config/types.js';
import { openSqliteStore } from '../src/store/index.js';
import { scanRepositories } from '../src/scan/scanner.js';
import { createScanClients } from '../src/scan/clients.js';
import { emptyConfig } from '../src/config/load.js';
import { silentLogger } from '../src/util/log.js';
import type { RegistryClientOptions } from '../src/scan/registry/client.js';

const REPOS = Number(process.env.BENCH_REPOS ?? 50);
const TAGS = Number(process.env.BENCH_TAGS ?? 1000);
const PAGE = 100;
const CONCURRENCY = 8;

function fail(message: string): never {
  console.error(`FAIL: ${message}`);
  process.exit(1);
}

const registry = await startRegistry();
const proxy = await startRegistryProxy(registry.url, { pageSize: PAGE });
const stateDir = await mkdtemp(join(tmpdir(), 'pawl-bench-scan-'));
try {
  let t = performance.now();
  const tags = Array.from({ length: TAGS }, (_, i) => `1.${Math.floor(i / 100)}.${i % 100}`);
  await pushTags(registry.url, 'bench/r0', tags, { concurrency: 32 });
  const pushMs = performance.now() - t;
  t = performance.now();
  const repoRoot = join(registry.storageDir, 'docker', 'registry', 'v2', 'repositories', 'bench');
  const copies = Array.from({ length: REPOS - 1 }, (_, i) => join(repoRoot, `r${i + 1}`));
  // Symbolic links: the registry reads repositories through the filesystem and follows them;
  // copying thousands of tiny link files per repository takes minutes on a slow disk.
  for (const dest of copies) await symlink(join(repoRoot, 'r0'), dest, 'dir');
  console.log(
    `setup: ${REPOS} repositories × ${TAGS} tags on Debian's docker-registry: ${TAGS} tags pushed in ${Math.round(pushMs)} ms, ` +
      `${REPOS - 1} repositories linked on disk to it in ${Math.round(performance.now() - t)} ms`,
  );

  const repos: ImageRepository[] = Array.from({ length: REPOS }, (_, i) => ({
    kind: 'ImageRepository',
    apiVersion: 'image.toolkit.fluxcd.io/v1',
    metadata: { namespace: 'bench', name: `r${i}`, labels: {}, annotations: {} },
    source: { file: 'bench', line: 1 },
    spec: {
      image: `${proxy.host}/bench/r${i}`,
      interval: 60_000,
      timeout: 60_000,
      insecure: true,
      exclusionList: ['^.*\\.sig$'],
      suspend: false,
      provider: 'generic',
    },
  }));
  const store = openSqliteStore(stateDir);
  const pages = Math.ceil(TAGS / PAGE);

  /** One cold scan then one steady-state rescan, with fresh clients; fails the bench on a wrong count. */
  async function measure(label: string, extra: Partial<RegistryClientOptions>): Promise<void> {
    const clients = createScanClients(emptyConfig(), {
      log: silentLogger,
      buildTimes: store.buildTimeCache(),
      extra,
    });
    const deps = {
      client: (r: ImageRepository) => clients.client(r),
      reference: (r: ImageRepository) => clients.reference(r),
      store,
      log: silentLogger,
    };
    let t0 = performance.now();
    const cold = await scanRepositories(repos, deps, { concurrency: CONCURRENCY });
    const coldMs = performance.now() - t0;
    if (cold.some((r) => r.error || r.tags !== TAGS))
      fail(`${label}: first scan: ${JSON.stringify(cold.find((r) => r.error || r.tags !== TAGS))}`);

    proxy.resetCounts();
    t0 = performance.now();
    const warm = await scanRepositories(repos, deps, { concurrency: CONCURRENCY });
    const warmMs = performance.now() - t0;
    if (warm.some((r) => r.error || r.tags !== TAGS || r.added.length || r.removed.length))
      fail(`${label}: steady-state scan changed or failed`);
    const perRepo = repos.map((r) => proxy.count('tags', `bench/${r.metadata.name}`));
    const c = {
      tags: proxy.count('tags'),
      ping: proxy.count('ping'),
      head: proxy.count('manifest-head'),
      get: proxy.count('manifest-get'),
      blob: proxy.count('blob'),
      other: proxy.count('other'),
    };
    console.log(`\n[${label}]`);
    console.log(`  first scan (new clients): ${Math.round(coldMs)} ms`);
    console.log(
      `  steady-state rescan:      ${Math.round(warmMs)} ms for ${REPOS} repositories (${(warmMs / REPOS).toFixed(1)} ms each, ${CONCURRENCY} at a time)`,
    );
    console.log(
      `  rescan requests at the registry: ${c.tags} tag-list (${pages} pages × ${REPOS} = ${pages * REPOS}), ${c.ping} ping, ` +
        `${c.head} manifest HEAD, ${c.get} manifest GET, ${c.blob} blob, ${c.other} other; client-reported ${warm.reduce((n, r) => n + r.requests, 0)}`,
    );
    if (perRepo.some((n) => n !== pages))
      fail(`${label}: expected ${pages} tag-list requests per repository, got ${JSON.stringify(perRepo)}`);
    if (c.head + c.get + c.blob > 0) fail(`${label}: a steady-state rescan fetched manifests or blobs`);
  }

  await measure('default per-registry limits (8 concurrent; a registry on loopback is not rate limited)', {});
  await measure("rate limit lifted (16 concurrent, 100000 requests/s): pawl's own cost", {
    limits: { maxConcurrent: 16, requestsPerSecond: 100_000 },
  });
  console.log(
    `\nmemory: peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB (the registry runs in its own process)`,
  );
  console.log('ok: one list request per page per repository, no manifest or blob requests');
  await store.close();
} finally {
  await proxy.stop();
  await registry.stop();
  await rm(stateDir, { recursive: true, force: true });
}
