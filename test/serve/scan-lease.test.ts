/**
 * Reconcile through never scans outside a repository's lease: while another replica holds the
 * ImageRepository job (here a coordinator that never grants it), the automation's pass waits for
 * that replica's scan, then goes on with what the store has — it does not scan the repository
 * itself. The daemon runs in-process with the real registry and git server.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pushTags } from '../helpers/push.js';
import { eventually } from '../helpers/serve.js';
import {
  automationJob,
  repositoryJob,
  startServer,
  type Clock,
  type PassEvent,
  type Server,
} from '../../src/serve/index.js';
import { LocalCoordinator, type Lease } from '../../src/serve/cluster/index.js';
import { inProcess, startServeWorld, type ServeWorld } from './fixtures.js';

const REPOSITORY = 'flux-system/app';

/** One replica whose peer holds every ImageRepository job: those claims are never granted. */
class PeerHoldsRepositories extends LocalCoordinator {
  readonly refused: string[] = [];
  override async claim(key: string): Promise<Lease | null> {
    if (key.startsWith('ImageRepository/')) {
      this.refused.push(key);
      return null;
    }
    return super.claim(key);
  }
}

/**
 * The system clock, with the short waits (the pass's wait for a peer's scan, up to 2 s each)
 * a hundred times shorter; the jobs' intervals (1 h) and timeouts are left as they are.
 */
const hurried: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms < 10_000 ? Math.ceil(ms / 100) : ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

describe('reconcile through, with the repository held by another replica', () => {
  let sw: ServeWorld;
  let server: Server;
  const coordinator = new PeerHoldsRepositories();
  const passes: PassEvent[] = [];

  before(async () => {
    sw = await startServeWorld();
    await pushTags(sw.world.registry.url, 'team/app', ['1.0.0', '1.1.0']);
    server = await startServer({ ...inProcess(sw), clock: hurried, coordinator });
    server.daemon.events.onReport((e) => passes.push(e));
  });
  after(async () => {
    await server?.stop(5_000);
    await sw?.world.close();
  });

  test('the pass goes on without a scan of its own: none is stored, the report says not scanned', async () => {
    const pass = await eventually(async () => passes[0], 'the first pass');
    assert.equal(pass.automation, 'flux-system/fleet');
    const key = repositoryJob(REPOSITORY);
    // The pass asked the repository's job (and waited) rather than leave the scan to nobody.
    assert.ok(
      coordinator.refused.filter((k) => k === key).length > 1,
      `the pass asked the repository's job again while it waited: ${coordinator.refused.length}`,
    );
    assert.equal(server.daemon.view.skipped(key), 'held');
    const latest = await server.daemon.view.store.latestScans([REPOSITORY]);
    assert.equal(latest.get(REPOSITORY)?.finished ?? null, null, 'no scan outside the lease');
    const repo = pass.report.repositories.find((r) => r.name === REPOSITORY);
    assert.deepEqual([repo?.scanned, repo?.tags], [false, 0]);
    // The automation's own job ran under its lease (granted): only the repository was held.
    assert.equal(server.daemon.view.skipped(automationJob('flux-system/fleet')), null);
  });
});
