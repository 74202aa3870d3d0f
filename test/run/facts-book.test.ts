/**
 * A pass's FactsBook once its evaluations are over (`evaluated`): what `prefetch` read is let go
 * and asked of the store again; the facts of each repository, with what they learnt, stay.
 */
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { emptyConfig, type ImagePolicy, type ImageRepository } from '../../src/config/index.js';
import { FactsBook, type PolicyDeps } from '../../src/run/policies.js';
import type { ScanRecord } from '../../src/records/index.js';
import type { LatestScans } from '../../src/store/index.js';
import { silentLogger } from '../../src/util/log.js';

const NS = 'flux-system';
const repository = (name: string) =>
  ({
    metadata: { namespace: NS, name },
    spec: { image: `registry.example/${name}` },
  }) as unknown as ImageRepository;
const policy = (name: string) =>
  ({
    metadata: { namespace: NS, name },
    spec: { imageRepositoryRef: { namespace: NS, name } },
  }) as unknown as ImagePolicy;

function world() {
  const config = emptyConfig();
  for (const n of ['a', 'b']) config.imageRepositories.set(`${NS}/${n}`, repository(n));
  const asked = { currentTags: 0, policyState: 0, lastFinishedScan: 0, heads: 0 };
  const scan = { id: 7, outcome: 'ok' } as unknown as ScanRecord;
  const store = {
    latestScans: async (names: string[]) =>
      new Map<string, LatestScans>(names.map((n) => [n, { finished: scan, good: scan }])),
    policyStates: async () => new Map(),
    currentTagsOf: async (names: string[]) => new Map(names.map((n) => [n, ['1.0.0']])),
    currentTags: async () => (asked.currentTags++, ['1.0.0']),
    getPolicyState: async () => (asked.policyState++, null),
    lastFinishedScan: async () => (asked.lastFinishedScan++, scan),
  };
  const clients = {
    reference: () => ({}),
    client: () => ({
      headManifest: async () => (asked.heads++, { exists: true, digest: 'sha256:abc' }),
    }),
  };
  const book = new FactsBook({
    config,
    store,
    clients,
    log: silentLogger,
    now: () => new Date(),
  } as unknown as PolicyDeps);
  return { book, asked };
}

test("a book's prefetched reads answer until the evaluations are over, then the store answers", async () => {
  const { book, asked } = world();
  await book.prefetch([policy('a'), policy('b')]);
  assert.deepEqual(await book.currentTags(`${NS}/a`), ['1.0.0']);
  await book.policyState(`${NS}/a`);
  await book.lastFinishedScan(`${NS}/a`);
  assert.notEqual(book.scansRead(`${NS}/a`), null);
  assert.deepEqual(asked, { currentTags: 0, policyState: 0, lastFinishedScan: 0, heads: 0 });
  book.evaluated();
  assert.deepEqual(await book.currentTags(`${NS}/a`), ['1.0.0']);
  await book.policyState(`${NS}/a`);
  await book.lastFinishedScan(`${NS}/a`);
  assert.equal(book.scansRead(`${NS}/a`), null);
  assert.deepEqual(asked, { currentTags: 1, policyState: 1, lastFinishedScan: 1, heads: 0 });
});

test('the facts of a repository, and what they learnt, stay past the evaluations', async () => {
  const { book, asked } = world();
  const b = book.forRepository(`${NS}/b`)!;
  assert.equal(await b.exists('1.0.0'), true);
  book.evaluated();
  assert.equal(book.forRepository(`${NS}/b`), b);
  assert.equal(await b.exists('1.0.0'), true);
  assert.equal(asked.heads, 1);
  assert.deepEqual(
    book.takeDigests().map((d) => [d.repository, d.tag, d.digest]),
    [[`${NS}/b`, '1.0.0', 'sha256:abc']],
  );
});
