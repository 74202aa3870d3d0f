/**
 * `pawl reconcile` and `pawl get --server` against a running daemon (in-process, the real
 * registry and git server): the daemon's webhook listener is on a port the registry does not
 * notify and every interval is an hour, so only the reconcile can make the pass that commits.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pushTags } from '../helpers/push.js';
import { freePort } from '../helpers/registry.js';
import { runCli } from '../helpers/world.js';
import { startServer, type PassEvent, type Server } from '../../src/serve/index.js';
import { inProcess, startServeWorld, type ServeWorld } from '../serve/fixtures.js';

describe('pawl reconcile against a running daemon', () => {
  let sw: ServeWorld;
  let server: Server;
  let url: string;
  before(async () => {
    sw = await startServeWorld();
    await pushTags(sw.world.registry.url, 'team/app', ['1.0.0']);
    const firstPass = new Promise<PassEvent>((resolve) => {
      const started = startServer(inProcess(sw)).then((s) => {
        s.daemon.events.onReport(resolve);
        return s;
      });
      void started.then((s) => (server = s));
    });
    await firstPass;
    url = `http://${server.admin}`;
  });
  after(async () => {
    await server?.stop(5000);
    await sw?.world.close();
  });

  test('after a new tag is pushed, reconcile automation makes the commit and prints it', async () => {
    const { world } = sw;
    await pushTags(world.registry.url, 'team/app', ['1.1.0']);
    const before = await world.git.log(world.repoName, 'main');
    const r = await runCli(['reconcile', 'automation', 'fleet', '--server', url]);
    assert.equal(r.code, 0, r.stderr);
    const sha = /committed ([0-9a-f]{40}) and pushed it to main/.exec(r.stdout)?.[1];
    assert.ok(sha, r.stdout);
    const log = await world.git.log(world.repoName, 'main');
    assert.equal(log.length, before.length + 1);
    assert.equal(log[0]!.sha, sha);
    assert.match(await world.git.show(world.repoName, sha, 'apps/app.yaml'), /team\/app:1\.1\.0 #/);

    const again = await runCli(['reconcile', 'automation', 'flux-system/fleet', '--server', url, '--json']);
    assert.equal(again.code, 0, again.stderr);
    const json = JSON.parse(again.stdout) as { state: string; pass: { result: string }; message: string };
    assert.equal(json.pass.result, 'up-to-date');
    assert.match(json.message, /^nothing to do/);
  });

  test('reconcile repository scans now and says what it found', async () => {
    await pushTags(sw.world.registry.url, 'team/app', ['1.2.0-rc.1']);
    const r = await runCli(['reconcile', 'repository', 'app', '--server', url]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^repository flux-system\/app: scanned 3 tags \(1 added, 0 removed\)$/m);
  });

  test("?wait=0 answers 202 at once with the job's state, and the scan still runs", async () => {
    const scanned = new Promise<void>((resolve) => {
      const off = server.daemon.events.onScan((e) => {
        if (e.report.name !== 'flux-system/app') return;
        off();
        resolve();
      });
    });
    const r = await fetch(`${url}/api/v1/repositories/flux-system/app/reconcile?wait=0`, { method: 'POST' });
    assert.equal(r.status, 202);
    const body = (await r.json()) as { state: string; message: string };
    assert.match(body.state, /^(queued|running)$/);
    assert.match(body.message, /ImageRepository flux-system\/app is (queued|running)/);
    await scanned;
  });

  test('get --server lists what the daemon knows, with Flux columns', async () => {
    const r = await runCli(['get', 'all', '--server', url]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^NAMESPACE\s+NAME\s+LAST SCAN\s+SUSPENDED\s+READY\s+MESSAGE$/m);
    assert.match(
      r.stdout,
      /^flux-system\s+imagerepository\/app\s+\S+Z\s+False\s+True\s+successful scan: found 3 tags$/m,
    );
    assert.match(r.stdout, /^flux-system\s+imagepolicy\/app\s+\S+\/team\/app:1\.1\.0\s+False\s+True\s+/m);
    assert.match(
      r.stdout,
      /^flux-system\s+imageupdateautomation\/fleet\s+\S+Z\s+False\s+True\s+no updates made$/m,
    );
    // From the store the daemon writes, without asking it: the same rows, the last run from its records.
    const stored = await sw.world.pawl(['get', 'all']);
    assert.equal(stored.code, 0, stored.stderr);
    assert.match(
      stored.stdout,
      /^flux-system\s+imagerepository\/app\s+\S+Z\s+False\s+True\s+successful scan: found 3 tags$/m,
    );
    assert.match(
      stored.stdout,
      /^flux-system\s+imagepolicy\/app\s+\S+\/team\/app:1\.1\.0\s+False\s+True\s+/m,
    );
    assert.match(stored.stdout, /^flux-system\s+imageupdateautomation\/fleet\s+\S+Z\s+False\s+True\s+/m);
    const json = await runCli(['get', 'automations', '-n', 'flux-system', '--server', url, '--json']);
    const rows = (JSON.parse(json.stdout) as { automations: { name: string; ready: string }[] }).automations;
    assert.deepEqual(
      rows.map((a) => [a.name, a.ready]),
      [['fleet', 'True']],
    );
  });

  test('an unknown object, a wrong token and no daemon are each named, with what to do', async () => {
    const missing = await runCli(['reconcile', 'automation', 'nope', '--server', url]);
    assert.equal(missing.code, 2);
    assert.match(
      missing.stderr,
      /ImageUpdateAutomation flux-system\/nope is not in the running configuration/,
    );
    const dir = await mkdtemp(join(tmpdir(), 'pawl-token-'));
    try {
      await writeFile(join(dir, 'token'), 'not-the-token-0123456789\n');
      // This daemon has no token: a given one is simply sent; a daemon without a listener is named.
      const nobody = `127.0.0.1:${await freePort()}`;
      const down = await runCli(['get', 'all', '--server', nobody, '--token-file', join(dir, 'token')]);
      assert.equal(down.code, 1);
      assert.ok(down.stderr.includes(`cannot reach pawl serve at http://${nobody} (`), down.stderr);
      assert.match(down.stderr, /is it running, and is that its --admin-listen\? Give --server URL/);
      assert.doesNotMatch(down.stderr, /not-the-token/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
