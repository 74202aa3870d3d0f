/**
 * The registry client and its test harness on Debian's docker-registry (token auth): pushing
 * 1,000 tags, listing 5,000 tags through the paginating proxy (page size 100), and build times
 * cold and cached. Prints figures; asserts only request counts.
 */
import { startRegistry, dockerConfigSecret } from '../test/helpers/registry.js';
import { startRegistryProxy } from '../test/helpers/registry-proxy.js';
import { pushImage, pushTags, seedTags } from '../test/helpers/push.js';
import { createRegistryClient } from '../src/scan/registry/client.js';
import { RegistryPool } from '../src/scan/registry/pool.js';
import { parseRepositoryRef } from '../src/scan/registry/reference.js';
import type { BuildTime } from '../src/scan/registry/types.js';

const reg = await startRegistry({ auth: 'token' });
const proxy = await startRegistryProxy(reg.url, { pageSize: 100 });
try {
  const auth = reg.user!;
  let t = performance.now();
  await pushTags(
    reg.url,
    'bench/same',
    Array.from({ length: 1000 }, (_, i) => `1.0.${i}`),
    { auth },
  );
  console.log(`push 1,000 tags of one image:           ${Math.round(performance.now() - t)} ms`);
  t = performance.now();
  await pushTags(
    reg.url,
    'bench/distinct',
    Array.from({ length: 1000 }, (_, i) => `1.0.${i}`),
    { auth, createdFor: (_tag, i) => new Date(Date.UTC(2024, 0, 1) + i * 60_000) },
  );
  console.log(`push 1,000 tags, each its own config:  ${Math.round(performance.now() - t)} ms`);
  const seed = await pushImage(reg.url, 'bench/big', 'seed', {
    created: new Date('2024-01-01T00:00:00Z'),
    auth,
  });
  t = performance.now();
  await seedTags(
    reg.storageDir,
    'bench/big',
    Array.from({ length: 4999 }, (_, i) => `2.0.${i}`),
    seed.digest,
  );
  console.log(`seed 5,000 tags on disk:                ${Math.round(performance.now() - t)} ms`);

  const cache = new Map<string, BuildTime | null>();
  const client = createRegistryClient({
    pool: new RegistryPool({ limits: { requestsPerSecond: 100_000 } }),
    dockerConfig: false,
    secret: dockerConfigSecret(proxy.host, auth.username, auth.password),
    buildTimeCache: {
      get: async (d) => cache.get(d),
      set: async (d, v) => void cache.set(d, v),
    },
  });
  const big = parseRepositoryRef(`${proxy.host}/bench/big`);
  t = performance.now();
  const list = await client.listTags(big);
  console.log(
    `list 5,000 tags, 50 pages:              ${Math.round(performance.now() - t)} ms, ${list.requests} requests (${proxy.count('tags')} pages, ping + token)`,
  );
  if (list.tags.length !== 5000 || proxy.count('tags') !== 50)
    throw new Error('listing was not complete in 50 pages');

  const distinct = parseRepositoryRef(`${proxy.host}/bench/distinct`);
  proxy.resetCounts();
  t = performance.now();
  for (let i = 0; i < 100; i++) await client.buildTime(distinct, `1.0.${i}`);
  console.log(
    `build time of 100 tags, cold:           ${Math.round(performance.now() - t)} ms, ${proxy.count('any')} requests`,
  );
  proxy.resetCounts();
  t = performance.now();
  for (let i = 0; i < 100; i++) await client.buildTime(distinct, `1.0.${i}`);
  console.log(
    `build time of 100 tags, cached digests: ${Math.round(performance.now() - t)} ms, ${proxy.count('any')} requests (HEAD only)`,
  );
  if (proxy.count('manifest-get') + proxy.count('blob') !== 0)
    throw new Error('cached build times fetched manifests or blobs');
  console.log(`memory: peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`);
} finally {
  await proxy.stop();
  await reg.stop();
}
