/**
 * Fuzz-style property test of the registry client's tag handling, against the real registry
 * behind the fault proxy: generated tag lists — valid tags, names with control characters,
 * white space, `../`, YAML, lone surrogates, 200 characters, JSON values that are not strings,
 * and bytes that are not UTF-8 — served as the tag-list page, then scanned into a real store.
 * No exception escapes; exactly the valid tags are kept (checked against the OCI grammar
 * written out here, not src's); every invalid entry is dropped and counted in the scan's
 * `invalid-tags` anomaly, whose examples are quoted and short. Fixed seed, printed on failure.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { startRegistry, type TestRegistry } from '../helpers/registry.js';
import { startRegistryProxy, type RegistryProxy } from '../helpers/registry-proxy.js';
import { pushImage } from '../helpers/push.js';
import { createRegistryClient } from '../../src/scan/registry/client.js';
import { RegistryPool } from '../../src/scan/registry/pool.js';
import { parseRepositoryRef } from '../../src/scan/registry/reference.js';
import { scanRepository } from '../../src/scan/scanner.js';
import { openSqliteStore as openStore } from '../../src/store/index.js';
import { silentLogger } from '../../src/util/log.js';
import type { ImageRepository } from '../../src/config/types.js';
import type { Anomaly } from '../../src/records/index.js';

const SEED = 9_2026;
/** The OCI distribution grammar for tags, written out independently of src/config/imageref.ts. */
const OCI_TAG = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;
/** Stands for an entry whose bytes are not UTF-8; replaced in the body after JSON.stringify. */
const RAW = '__not_utf8__';

const validTag = fc.stringMatching(/^[A-Za-z0-9_][A-Za-z0-9._-]{0,30}$/);
const invalidTag = fc.oneof(
  fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }),
  fc.constantFrom(
    '../../x',
    'a b',
    '1.0.0\nimage: evil',
    '-x',
    '.x',
    '',
    '\u0000',
    '\uD800',
    'tab\there',
    'é',
    'x'.repeat(129),
    'y'.repeat(200),
  ),
);
const notString = fc.oneof(
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.constant({ a: 1 }),
  fc.constant([1]),
);
const entry = fc.oneof(
  { weight: 3, arbitrary: validTag },
  { weight: 3, arbitrary: invalidTag },
  { weight: 1, arbitrary: notString },
  { weight: 1, arbitrary: fc.constant(RAW) },
);

function imageRepo(image: string): ImageRepository {
  return {
    kind: 'ImageRepository',
    apiVersion: 'image.toolkit.fluxcd.io/v1',
    metadata: { namespace: 'apps', name: 'fuzz', labels: {}, annotations: {} },
    source: { file: 'repos.yaml', line: 1 },
    spec: {
      image,
      interval: 60_000,
      timeout: 30_000,
      insecure: false,
      exclusionList: [],
      suspend: false,
      provider: 'generic',
    },
  };
}

describe('fuzz: the registry client and scanner over generated tag lists', () => {
  let reg: TestRegistry;
  let proxy: RegistryProxy;
  before(async () => {
    reg = await startRegistry({ auth: 'none' });
    await pushImage(reg.url, 'org/app', 'seed', { created: new Date('2024-01-01T00:00:00Z') });
    proxy = await startRegistryProxy(reg.url);
  });
  after(async () => {
    await proxy?.stop();
    await reg?.stop();
  });

  test('no exception escapes; exactly the valid tags are kept; every invalid one is counted', async () => {
    const store = openStore(':memory:');
    const repo = imageRepo(`${proxy.host}/org/app`);
    const ref = parseRepositoryRef(repo.spec.image);
    const client = createRegistryClient({
      pool: new RegistryPool({ limits: { requestsPerSecond: 10_000 } }),
      dockerConfig: false,
    });
    let runs = 0;
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(entry, { maxLength: 25 }), async (entries) => {
          runs++;
          const json = Buffer.from(JSON.stringify({ name: 'org/app', tags: entries }));
          // Each RAW entry becomes a string whose bytes are not UTF-8 (a stray Latin-1 é and 0xFF).
          const raw = Buffer.from(`"${RAW}"`);
          const parts: Buffer[] = [];
          let at = 0;
          for (let i = json.indexOf(raw); i >= 0; i = json.indexOf(raw, at)) {
            parts.push(json.subarray(at, i), Buffer.from([0x22, 0x61, 0xe9, 0xff, 0x22]));
            at = i + raw.length;
          }
          parts.push(json.subarray(at));
          proxy.clearFaults();
          proxy.addFault({ kind: 'tags', action: { status: 200, body: Buffer.concat(parts) } });

          const report = await scanRepository(repo, {
            client,
            store,
            log: silentLogger,
            reference: () => ref,
          });
          assert.equal(report.error, null, `the scan failed: ${report.error}`);

          const valid = new Set(
            entries.filter((e): e is string => typeof e === 'string' && e !== RAW && OCI_TAG.test(e)),
          );
          const invalid = entries.filter(
            (e) => !(typeof e === 'string' && e !== RAW && OCI_TAG.test(e)),
          ).length;
          assert.deepEqual(new Set(await store.currentTags('apps/fuzz')), valid);
          assert.equal(report.tags, valid.size);
          const anomaly = report.anomalies.find(
            (a): a is Extract<Anomaly, { kind: 'invalid-tags' }> => a.kind === 'invalid-tags',
          );
          if (invalid === 0) assert.equal(anomaly, undefined);
          else {
            assert.ok(anomaly, `${invalid} invalid entries, no invalid-tags anomaly`);
            assert.equal(anomaly.count, invalid);
            assert.equal(anomaly.examples.length, Math.min(invalid, 5));
            for (const ex of anomaly.examples) {
              assert.ok(ex.length <= 61, `example too long: ${ex.length}`);
              assert.doesNotMatch(
                ex,
                /[\u0000-\u001f\u007f]/,
                'examples are JSON-quoted: no raw control characters',
              );
            }
            const stored = (await store.lastGoodScan('apps/fuzz'))!.anomalies.find(
              (a) => a.kind === 'invalid-tags',
            );
            assert.deepEqual(stored, anomaly, 'recorded in the store as the scan anomaly');
          }
        }),
        { numRuns: 150, seed: SEED },
      );
    } finally {
      await store.close();
    }
    assert.equal(runs, 150);
  });
});
