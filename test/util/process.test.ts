/**
 * The one process runner (src/util/process.ts) gives a stopped program's result even when a
 * helper that left the program's process group still holds its output open: a pass is never held
 * for good by a program it has already stopped.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { processAlive, spawnProcess } from '../../src/util/index.js';

const leftBehind: number[] = [];
after(() => {
  for (const pid of leftBehind) if (processAlive(pid)) process.kill(pid, 'SIGKILL');
});

test(
  'a stopped program whose helper left its group and holds its output still gives its result',
  { timeout: 60_000 },
  async () => {
    // `setsid` puts the helper in a session of its own, out of reach of the group's signals; it
    // keeps the program's standard output open, so node never sees the output close.
    const r = await spawnProcess('sh', ['-c', 'setsid sleep 600 & echo $!; exec sleep 600'], {
      timeoutMs: 300,
      maxBytes: 1 << 20,
    });
    assert.ok(r.started);
    const helper = Number(r.stdout.toString().trim());
    leftBehind.push(helper);
    assert.equal(r.stopped, 'timeout');
    assert.equal(r.code, null);
    assert.ok(helper > 0 && processAlive(helper), 'the helper is still there, holding the output');
  },
);
