/** The daemon's readable log lines (on a terminal): time, level, the object first, then the rest. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LogOutput, readableLine } from '../../src/serve/log.js';
import { ROOT } from '../helpers/world.js';

test('a JSON record becomes one readable line naming its object first', () => {
  const line = readableLine(
    JSON.stringify({
      level: 40,
      time: Date.UTC(2026, 0, 2, 3, 4, 5),
      msg: 'run failed; retrying with backoff',
      error: 'registry down',
      job: 'ImageRepository/flux-system/app',
      trigger: 'interval',
    }),
  );
  assert.equal(
    line,
    '03:04:05 WARN  job=ImageRepository/flux-system/app run failed; retrying with backoff error="registry down" trigger=interval',
  );
  assert.equal(readableLine('not json'), 'not json');
});

describe('LogOutput: the daemon’s JSON records, gathered once it handles signals', () => {
  const lines = (n: number) => Array.from({ length: n }, (_, i) => `{"msg":"record ${i}"}\n`);

  test('written at once until buffer(); then gathered and written together, within the delay', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pawl-log-'));
    const file = join(dir, 'log');
    const fd = openSync(file, 'w');
    try {
      const out = new LogOutput(fd, { delayMs: 20 });
      out.write(lines(1)[0]!);
      assert.equal(readFileSync(file, 'utf8'), lines(1).join(''), 'before buffer(): at once');
      out.buffer();
      for (const l of lines(3)) out.write(l);
      assert.equal(out.pending, 3);
      assert.equal(readFileSync(file, 'utf8'), lines(1).join(''), 'gathered, not written yet');
      while (out.pending > 0) await new Promise((r) => setTimeout(r, 10));
      assert.equal(readFileSync(file, 'utf8'), lines(1).join('') + lines(3).join(''));
    } finally {
      closeSync(fd);
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('a full buffer is written at once', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pawl-log-'));
    const file = join(dir, 'log');
    const fd = openSync(file, 'w');
    try {
      const out = new LogOutput(fd, { delayMs: 60_000, maxBytes: 100 });
      out.buffer();
      for (const l of lines(10)) out.write(l);
      assert.ok(out.pending < 10);
      assert.ok(readFileSync(file, 'utf8').startsWith(lines(5).join('')));
      out.flushSync();
      assert.equal(readFileSync(file, 'utf8'), lines(10).join(''));
    } finally {
      closeSync(fd);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('nothing gathered is lost when a signal ends the process through process.exit', async () => {
    // The shape of `pawl serve`: SIGTERM handled, then process.exit; the records are on a pipe.
    const script = `
      import { LogOutput } from ${JSON.stringify(join(ROOT, 'src', 'serve', 'log.ts'))};
      const out = new LogOutput(1, { delayMs: 60_000, maxBytes: 1 << 20 });
      process.once('SIGTERM', () => { out.write('{"msg":"stopped"}\\n'); process.exit(0); });
      out.buffer();
      for (let i = 0; i < 5000; i++) out.write(JSON.stringify({ msg: 'record ' + i }) + '\\n');
      process.stderr.write('ready\\n');
      setInterval(() => {}, 1000);
    `;
    const dir = await mkdtemp(join(tmpdir(), 'pawl-log-'));
    const file = join(dir, 'child.mjs');
    await writeFile(file, script);
    const child = spawn(process.execPath, ['--import', 'tsx', file], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    let stderr = '';
    await new Promise<void>((resolve, reject) => {
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')).includes('ready') && resolve());
      child.once('exit', () => reject(new Error(`the child exited: ${stderr}`)));
    });
    assert.equal(stdout, '', 'gathered: nothing written before the signal');
    child.kill('SIGTERM');
    const code = await new Promise<number | null>((r) => child.once('close', r));
    assert.equal(code, 0);
    const got = stdout.trim().split('\n');
    assert.equal(got.length, 5001);
    assert.equal(got[4999], '{"msg":"record 4999"}');
    assert.equal(got[5000], '{"msg":"stopped"}');
    await rm(dir, { recursive: true, force: true });
  });
});
