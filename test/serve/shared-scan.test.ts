/**
 * A webhook for an image two automations use: both passes want the repository scanned after the
 * webhook, and one scan does for both (src/serve/jobs/repository.ts: a scan that begins after the
 * webhook is joined, or taken when it is done), not a scan for each pass. Ten automations over
 * 10,000 repositories made 73,266 scans of one `pawl reconcile` round before (docs/performance.md).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { pushTags } from '../helpers/push.js';
import { eventually } from '../helpers/serve.js';
import { automationJob, startServer, type PassEvent, type Server } from '../../src/serve/index.js';
import { HOOK_PATH, inProcess, postEvent, startServeWorld, type ServeWorld } from './fixtures.js';

const AUTOMATIONS = ['flux-system/fleet', 'flux-system/second'];
/** A second automation over the same GitRepository and markers. */
const SECOND = `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata:
  name: second
  namespace: flux-system
spec:
  interval: 1h
  sourceRef:
    kind: GitRepository
    name: fleet
  git:
    commit:
      author:
        name: pawl-bot
        email: pawl@example.com
  update:
    path: ./
    strategy: Setters
`;

let sw: ServeWorld;
let server: Server | undefined;
let passes: PassEvent[] = [];
let scanned: number[] = [];

const idle = (s: Server) =>
  eventually(async () => {
    for (const a of AUTOMATIONS) {
      const st = s.daemon.scheduler.status(automationJob(a));
      if (!st || st.running || st.queued) return undefined;
    }
    return true;
  }, 'both automations idle');

/** A daemon over the world, both automations' first passes done. */
async function start(passConcurrency?: number): Promise<Server> {
  await server?.stop(5_000);
  passes = [];
  scanned = [];
  const s = await startServer({ ...inProcess(sw), ...(passConcurrency ? { passConcurrency } : {}) });
  server = s;
  s.daemon.events.onReport((e) => passes.push(e));
  s.daemon.events.onScan((e) => {
    if (e.report.name === 'flux-system/app') scanned.push(e.at.getTime());
  });
  await eventually(
    async () => (AUTOMATIONS.every((a) => passes.some((p) => p.automation === a)) ? true : undefined),
    'the first pass of both automations',
  );
  await idle(s);
  return s;
}

before(async () => {
  sw = await startServeWorld();
  await pushTags(sw.world.registry.url, 'team/app', ['1.0.0']);
  await sw.world.writeConfig('second.yaml', SECOND);
});
after(async () => {
  await server?.stop(5_000);
  await sw?.world.close();
});

/** One webhook for the tag; both passes run for it; the scans of the repository it caused. */
async function webhook(s: Server, tag: string, results: [string, string][]): Promise<number> {
  await pushTags(sw.world.registry.url, 'team/app', [tag]);
  const at = Date.now();
  const scansBefore = scanned.length;
  assert.equal(await postEvent(`http://${s.listen}${HOOK_PATH}`, tag), 202);
  const ran = await eventually(async () => {
    const after = passes.filter((p) => p.startedAt.getTime() >= at);
    return AUTOMATIONS.every((a) => after.some((p) => p.automation === a)) ? after : undefined;
  }, "both automations' passes after the webhook");
  await idle(s);
  assert.deepEqual(ran.map((p) => [p.automation, p.report.automations[0]?.result]).sort(), results);
  return scanned.length - scansBefore;
}

test("one webhook, two automations' passes: the repository is scanned once", async () => {
  const s = await start();
  // Both passes run for the webhook; the first pushes 1.1.0 to main, the second then finds main
  // up to date (it checks out the same branch).
  const scans = await webhook(s, '1.1.0', [
    ['flux-system/fleet', 'pushed'],
    ['flux-system/second', 'up-to-date'],
  ]);
  assert.equal(scans, 1, 'scans of flux-system/app after the webhook');
});

test('one webhook, two automations, one pass at a time: the second pass takes the first scan too', async () => {
  // The second pass takes its work only after the first pass is done, after the scan the first
  // asked for began: a scan after the webhook's arrival still lists its tag, so it does.
  const s = await start(1);
  const scans = await webhook(s, '1.2.0', [
    ['flux-system/fleet', 'pushed'],
    ['flux-system/second', 'up-to-date'],
  ]);
  assert.equal(scans, 1, 'scans of flux-system/app after the webhook');
});
