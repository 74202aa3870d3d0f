/**
 * One `pawl serve` per SQLite state directory: a second is refused and told why and what to do,
 * the people's commands still read the state meanwhile, and the lock of a killed daemon does not
 * keep the next one out.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort } from '../helpers/registry.js';
import { pushTags } from '../helpers/push.js';
import { startServe, type ServeProcess } from '../helpers/serve.js';
import { startServeWorld, type ServeWorld } from './fixtures.js';

describe('pawl serve and the SQLite state directory', () => {
  let sw: ServeWorld;
  let first: ServeProcess;
  before(async () => {
    sw = await startServeWorld();
    await pushTags(sw.world.registry.url, 'team/app', ['1.0.0']);
    first = await startServe({
      configDir: sw.world.configDir,
      stateDir: sw.world.stateDir,
      listenPort: sw.port,
    });
    await first.waitForLog((r) => r.msg === 'pass', 'first pass');
  });
  after(async () => {
    await first?.stop('SIGKILL');
    await sw?.world.close();
  });

  test('a second pawl serve on the same state is refused, naming the holder and --store postgres://', async () => {
    const lock = join(sw.world.stateDir, 'pawl.db.serve-lock');
    const holder = JSON.parse(await readFile(lock, 'utf8')) as { pid: number };
    assert.equal(holder.pid, first.child.pid);
    const second = await sw.world.pawl([
      'serve',
      '--listen',
      `127.0.0.1:${await freePort()}`,
      '--admin-listen',
      `127.0.0.1:${await freePort()}`,
    ]);
    assert.equal(second.code, 1, second.stderr);
    assert.match(second.stderr, /another pawl serve is using the SQLite store/);
    assert.match(second.stderr, new RegExp(`pid ${first.child.pid}`));
    assert.match(second.stderr, /--store postgres:\/\//);
    // The first one is untouched, and the people's commands read the state while it runs.
    assert.equal((await first.adminGet('/readyz')).status, 200);
    const tags = await sw.world.pawl(['tags', 'app']);
    assert.equal(tags.code, 0, tags.stderr);
    assert.match(tags.stdout, /1\.0\.0/);
    const explained = await sw.world.pawl(['explain', 'app']);
    assert.equal(explained.code, 0, explained.stderr);
  });

  test('after kill -9 the lock is stale: the next pawl serve starts; a clean stop removes it', async () => {
    await first.stop('SIGKILL');
    const lock = join(sw.world.stateDir, 'pawl.db.serve-lock');
    assert.ok(existsSync(lock), 'a killed daemon leaves its lock behind');
    first = await startServe({
      configDir: sw.world.configDir,
      stateDir: sw.world.stateDir,
      listenPort: sw.port,
    });
    await first.waitForLog((r) => r.msg === 'taking over the lock of a pawl serve that is gone', 'takeover');
    // Its signal handlers are in place once it has started working.
    await first.waitForLog((r) => r.msg === 'pass', 'a pass');
    const { code } = await first.stop('SIGTERM');
    assert.equal(code, 0);
    assert.ok(!existsSync(lock), 'a clean stop removes the lock');
  });
});
