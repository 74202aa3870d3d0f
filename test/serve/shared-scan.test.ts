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
let server: Server;
const passes: PassEvent[] = [];
const scanned: number[] = [];

const idle = () =>
  eventually(async () => {
    for (const a of AUTOMATIONS) {
      const st = server.daemon.scheduler.status(automationJob(a));
      if (!st || st.running || st.queued) return undefined;
    }
    return true;
  }, 'both automations idle');

before(async () => {
  sw = await startServeWorld();
  await pushTags(sw.world.registry.url, 'team/app', ['1.0.0']);
  await sw.world.writeConfig('second.yaml', SECOND);
  server = await startServer(inProcess(sw));
  server.daemon.events.onReport((e) => passes.push(e));
  server.daemon.events.onScan((e) => {
    if (e.report.name === 'flux-system/app') scanned.push(e.at.getTime());
  });
  await eventually(
    async () => (AUTOMATIONS.every((a) => passes.some((p) => p.automation === a)) ? true : undefined),
    'the first pass of both automations',
  );
  await idle();
});
after(async () => {
  await server?.stop(5_000);
  await sw?.world.close();
});

test("one webhook, two automations' passes: the repository is scanned once", async () => {
  await pushTags(sw.world.registry.url, 'team/app', ['1.1.0']);
  const at = Date.now();
  const scansBefore = scanned.length;
  assert.equal(await postEvent(`http://${server.listen}${HOOK_PATH}`, '1.1.0'), 202);
  // Both passes run for the webhook; the first pushes 1.1.0 to main, the second then finds main
  // up to date (it checks out the same branch).
  const ran = await eventually(async () => {
    const after = passes.filter((p) => p.startedAt.getTime() >= at);
    return AUTOMATIONS.every((a) => after.some((p) => p.automation === a)) ? after : undefined;
  }, "both automations' passes after the webhook");
  await idle();
  assert.deepEqual(ran.map((p) => [p.automation, p.report.automations[0]?.result]).sort(), [
    ['flux-system/fleet', 'pushed'],
    ['flux-system/second', 'up-to-date'],
  ]);
  assert.equal(scanned.length - scansBefore, 1, 'scans of flux-system/app after the webhook');
});
