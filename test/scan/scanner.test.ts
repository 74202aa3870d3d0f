import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ImageRepository } from '../../src/config/types.js';
import type {
  RecordedResponse,
  RegistryClient,
  RepositoryRef,
  TagList,
} from '../../src/scan/registry/types.js';
import { isScanDue, scanRepositories, scanRepository, type ScanDeps } from '../../src/scan/scanner.js';
import { openSqliteStore as openStore, type Store } from '../../src/store/index.js';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { silentLogger } from '../../src/util/log.js';

const T0 = new Date('2026-03-01T12:00:00Z');

function imageRepo(name: string, spec: Partial<ImageRepository['spec']> = {}): ImageRepository {
  return {
    kind: 'ImageRepository',
    apiVersion: 'image.toolkit.fluxcd.io/v1',
    metadata: { namespace: 'apps', name, labels: {}, annotations: {} },
    source: { file: 'repos.yaml', line: 1 },
    spec: {
      image: `registry.example/${name}`,
      interval: 5 * 60_000,
      timeout: 60_000,
      insecure: false,
      exclusionList: ['^.*\\.sig$'],
      suspend: false,
      provider: 'generic',
      ...spec,
    },
  };
}

const reference = (repo: ImageRepository): RepositoryRef => ({
  original: repo.spec.image,
  registry: 'registry.example',
  baseUrl: 'https://registry.example',
  path: repo.spec.image.split('/').slice(1).join('/'),
  canonical: repo.spec.image,
});

type Script = (ref: RepositoryRef, signal?: AbortSignal) => Promise<TagList>;

class FakeClient implements RegistryClient {
  calls: string[] = [];
  constructor(private script: Script) {}
  set(script: Script): void {
    this.script = script;
  }
  listTags(ref: RepositoryRef, opts?: { signal?: AbortSignal }): Promise<TagList> {
    this.calls.push(`list ${ref.path}`);
    return this.script(ref, opts?.signal);
  }
  headManifest(): Promise<never> {
    throw new Error('not expected');
  }
  platformDigest(): Promise<never> {
    throw new Error('not expected');
  }
  signatures(): Promise<never> {
    throw new Error('not expected');
  }
  bundles(): Promise<never> {
    throw new Error('not expected');
  }
  buildTime(): Promise<never> {
    throw new Error('not expected');
  }
}

const response = (body: string): RecordedResponse => ({
  method: 'GET',
  url: 'https://registry.example/v2/app/tags/list',
  status: 200,
  headers: { 'content-type': 'application/json' },
  body,
  at: T0.toISOString(),
  durationMs: 1,
});

const listing =
  (tags: string[], requests = 2): Script =>
  async () => ({ tags, pages: 1, requests, responses: [response(JSON.stringify({ tags }))] });

function deps(client: RegistryClient, store: Store, now = () => T0): ScanDeps {
  return { client, store, now, log: silentLogger, reference };
}

describe('scanRepository', () => {
  test('stores the tags, drops excluded ones and reports the diff', async () => {
    const store = openStore(':memory:');
    const client = new FakeClient(listing(['1.0.0', '1.0.0.sig', '1.1.0']));
    const repo = imageRepo('app');
    const first = await scanRepository(repo, deps(client, store));
    assert.deepEqual(first, {
      name: 'apps/app',
      image: 'registry.example/app',
      tags: 2,
      scanned: true,
      suspended: false,
      anomalies: [],
      error: null,
      added: ['1.0.0', '1.1.0'],
      removed: [],
      requests: 2,
    });
    assert.deepEqual(await store.currentTags('apps/app'), ['1.0.0', '1.1.0']);
    assert.equal((await store.rawResponses('apps/app')).length, 1);

    client.set(listing(['1.1.0', '1.2.0'], 3));
    const second = await scanRepository(repo, deps(client, store));
    assert.deepEqual(second.added, ['1.2.0']);
    assert.deepEqual(second.removed, ['1.0.0']);
    assert.deepEqual(second.anomalies, [{ kind: 'tags-missing', count: 1, tags: ['1.0.0'] }]);
    assert.equal(second.requests, 3);
  });

  test("logs 'scanned' at info only when a listing changed since the last good one", async () => {
    const lines: { level: number; msg: string; added?: number; removed?: number }[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l));
        done();
      },
    });
    const log = pino({ level: 'debug' }, sink);
    const store = openStore(':memory:');
    const client = new FakeClient(listing(['1.0.0']));
    const repo = imageRepo('app');
    const scan = async (): Promise<{ level: number; added?: number; removed?: number }> => {
      lines.length = 0;
      await scanRepository(repo, { ...deps(client, store), log });
      await new Promise((r) => setImmediate(r));
      const rec = lines.find((l) => l.msg === 'scanned');
      assert.ok(rec, 'a scanned record');
      return rec;
    };
    // A first scan (an empty state) and an unchanged one say nothing the pass does not: debug.
    assert.equal((await scan()).level, 20);
    assert.equal((await scan()).level, 20);
    client.set(listing(['1.0.0', '1.1.0']));
    const changed = await scan();
    assert.deepEqual([changed.level, changed.added, changed.removed], [30, 1, 0]);
  });

  test('an error stores no partial data and keeps the previous tags', async () => {
    const store = openStore(':memory:');
    const client = new FakeClient(listing(['a', 'b']));
    const repo = imageRepo('app');
    await scanRepository(repo, deps(client, store));
    client.set(async () => {
      throw Object.assign(
        new Error(
          'GET https://registry.example/v2/app/tags/list?last=b: 503 Service Unavailable after 4 attempts',
        ),
        {
          requests: 6,
          responses: [response('{"tags":["c"]}')],
        },
      );
    });
    const r = await scanRepository(repo, deps(client, store));
    assert.equal(r.scanned, false);
    assert.match(r.error!, /503 Service Unavailable/);
    assert.equal(r.tags, 2);
    assert.equal(r.requests, 6);
    assert.deepEqual(await store.currentTags('apps/app'), ['a', 'b']);
    assert.equal((await store.lastScan('apps/app'))!.outcome, 'failed');
    // The failed scan's responses are kept for debugging, but its tags were never stored.
    assert.equal((await store.rawResponses('apps/app'))[0]!.outcome, 'failed');
    assert.equal(await store.tagInfo('apps/app', 'c'), null);
  });

  test('spec.timeout aborts the listing and names the object', async () => {
    const store = openStore(':memory:');
    const client = new FakeClient(
      (_ref, signal) =>
        new Promise((_resolve, reject) => {
          signal?.addEventListener('abort', () => reject(signal.reason as Error));
        }),
    );
    const r = await scanRepository(imageRepo('slow', { timeout: 30 }), deps(client, store));
    assert.equal(r.scanned, false);
    assert.match(r.error!, /timed out after 30ms \(spec\.timeout of ImageRepository apps\/slow\)/);
    assert.equal((await store.lastScan('apps/slow'))!.outcome, 'failed');
    assert.deepEqual(await store.currentTags('apps/slow'), []);
  });

  test('an empty list is a good scan with the empty anomaly', async () => {
    const store = openStore(':memory:');
    const client = new FakeClient(listing(['x.sig']));
    const r = await scanRepository(imageRepo('app'), deps(client, store));
    assert.equal(r.scanned, true);
    assert.deepEqual(r.anomalies, [{ kind: 'empty' }]);
  });

  test('suspended: reported with the stored count, registry not called, no scan row', async () => {
    const store = openStore(':memory:');
    const client = new FakeClient(listing(['1', '2', '3']));
    await scanRepository(imageRepo('app'), deps(client, store));
    const r = await scanRepository(imageRepo('app', { suspend: true }), deps(client, store));
    assert.equal(r.suspended, true);
    assert.equal(r.scanned, false);
    assert.equal(r.tags, 3);
    assert.equal(client.calls.length, 1);
    assert.equal((await store.scanHistory('apps/app', 10)).length, 1);
  });
});

describe('isScanDue', () => {
  test('never scanned, interval elapsed, image changed, suspended', async () => {
    const store = openStore(':memory:');
    const repo = imageRepo('app');
    assert.equal(isScanDue(repo, await store.lastFinishedScan('apps/app'), T0), true);
    await scanRepository(repo, deps(new FakeClient(listing(['1'])), store));
    assert.equal(
      isScanDue(repo, await store.lastFinishedScan('apps/app'), new Date(T0.getTime() + 60_000)),
      false,
    );
    assert.equal(
      isScanDue(repo, await store.lastFinishedScan('apps/app'), new Date(T0.getTime() + 5 * 60_000)),
      true,
    );
    assert.equal(
      isScanDue(
        imageRepo('app', { image: 'registry.example/other' }),
        await store.lastFinishedScan('apps/app'),
        T0,
      ),
      true,
    );
    assert.equal(
      isScanDue(
        imageRepo('app', { suspend: true }),
        await store.lastFinishedScan('apps/app'),
        new Date(T0.getTime() + 10 * 60_000),
      ),
      false,
    );
  });

  test('a failed scan counts: a broken registry is retried once per interval', async () => {
    const store = openStore(':memory:');
    const repo = imageRepo('app');
    const failing = new FakeClient(async () => {
      throw new Error('connection refused');
    });
    await scanRepository(repo, deps(failing, store));
    assert.equal(
      isScanDue(repo, await store.lastFinishedScan('apps/app'), new Date(T0.getTime() + 60_000)),
      false,
    );
  });
});

describe('scanRepositories', () => {
  test('respects the concurrency limit and keeps input order', async () => {
    const store = openStore(':memory:');
    let inFlight = 0;
    let peak = 0;
    const client = new FakeClient(async (ref) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await new Promise((r) => setTimeout(r, 5));
      inFlight--;
      return { tags: [ref.path], pages: 1, requests: 1, responses: [] };
    });
    const repos = Array.from({ length: 7 }, (_, i) => imageRepo(`r${i}`));
    const progress: number[] = [];
    const reports = await scanRepositories(repos, deps(client, store), {
      concurrency: 3,
      onDone: (_r, done) => progress.push(done),
    });
    assert.deepEqual(
      reports.map((r) => r.name),
      repos.map((r) => `apps/${r.metadata.name}`),
    );
    assert.equal(peak, 3);
    assert.deepEqual(progress, [1, 2, 3, 4, 5, 6, 7]);
    assert.ok(reports.every((r) => r.scanned && r.tags === 1));
  });
});

test('a client that ignores the signal still cannot outlive spec.timeout', async () => {
  const store = openStore(':memory:');
  let release: (v: TagList) => void = () => undefined;
  const client = new FakeClient(() => new Promise<TagList>((resolve) => (release = resolve)));
  const r = await scanRepository(imageRepo('deaf', { timeout: 20 }), deps(client, store));
  assert.match(r.error!, /timed out/);
  release({ tags: ['late'], pages: 1, requests: 1, responses: [] });
  await new Promise((r) => setTimeout(r, 5));
  assert.deepEqual(await store.currentTags('apps/deaf'), []);
});
