/**
 * What a pass holds while it waits for its scans (issue 27): a daemon's passes wait on thousands
 * of repositories' scans at once, and what each holds meanwhile is held that many times over.
 * The latest scans it read of the repositories it waits on are not asked again (their scans now
 * are), so it lets them go before it waits: newer scans replace them everywhere else meanwhile.
 */
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { emptyConfig, type ImagePolicy, type ImageRepository } from '../../src/config/index.js';
import { runPass, type PassDeps } from '../../src/run/index.js';
import type { LatestScans } from '../../src/store/index.js';
import { silentLogger } from '../../src/util/log.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const N = 2_000;
/** Each latest-scan record the store hands out carries ~2 KB: what holding them costs shows. */
const RECORD_BYTES = 2_048;

test('a pass waiting on its scans holds none of the latest scans it read of the repositories it waits on', async () => {
  const stateDir = await mkdtemp(join(tmpdir(), 'pawl-pass-memory-'));
  try {
    const config = emptyConfig();
    for (let i = 0; i < N; i++) {
      const ref = { namespace: 'flux-system', name: `app-${i}` };
      config.imageRepositories.set(`flux-system/app-${i}`, {
        metadata: ref,
        spec: { image: `registry.example/app-${i}`, interval: '1h', suspend: false },
      } as unknown as ImageRepository);
      config.imagePolicies.set(`flux-system/app-${i}`, {
        metadata: ref,
        spec: { imageRepositoryRef: ref },
      } as unknown as ImagePolicy);
    }
    // A store whose every read makes new records, as one does once newer scans replaced them.
    const record = (i: number) => ({
      id: i,
      outcome: 'ok',
      error: Buffer.alloc(RECORD_BYTES, 48 + (i % 10)).toString('latin1'),
    });
    const store = {
      beginRun: async () => 1,
      latestScans: async (names: string[]) =>
        new Map<string, LatestScans>(
          names.map((n, i) => {
            const r = record(i) as unknown as LatestScans['finished'];
            return [n, { finished: r, good: r }];
          }),
        ),
      write: async () => undefined,
      flush: async () => undefined,
      openBatches: async () => new Map(),
    };
    const stop = new Error('measured');
    let held = -1;
    const deps = {
      config,
      store,
      stateDir,
      clients: {},
      log: silentLogger,
      scans: {
        ensureScanned: async () => {
          gc();
          held = process.memoryUsage().heapUsed - baseline;
          throw stop;
        },
      },
    } as unknown as PassDeps;
    gc();
    const baseline = process.memoryUsage().heapUsed;
    await assert.rejects(runPass(deps, { refresh: true }), (err) => err === stop);
    assert.ok(held >= 0, 'the pass waited for its scans');
    // What the pass itself holds for each repository (its tables and the wait's list) is well
    // under a record; holding the records read would be more than one each.
    assert.ok(held / N < RECORD_BYTES / 2, `${Math.round(held / N)} bytes for each repository waited on`);
  } finally {
    await rm(stateDir, { recursive: true, force: true });
  }
});
