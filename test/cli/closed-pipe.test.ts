/**
 * A reader that closes the pipe early (`pawl … | head`) ends the output, not the command: no
 * stack trace, and the command's own exit status.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from '../helpers/world.js';

/** Runs node with `args`, its stdout closed at once: pawl starts long after, so every write it makes meets a pipe with no reader. */
async function withClosedStdout(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.destroy();
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const code = await new Promise<number | null>((r) => child.on('close', (c) => r(c)));
  return { code, stderr };
}

test('stdout closed before pawl writes: the command ends with its own status and says nothing of it', async () => {
  const r = await withClosedStdout([
    '--import',
    import.meta.resolve('tsx'),
    join(ROOT, 'src', 'cli', 'main.ts'),
    'completion',
    'bash',
  ]);
  assert.deepEqual(r, { code: 0, stderr: '' });
});

test('stdout closed before `pawl --version` writes (answered by bin/pawl.js alone): no stack trace either', async () => {
  const r = await withClosedStdout([join(ROOT, 'bin', 'pawl.js'), '--version']);
  assert.deepEqual(r, { code: 0, stderr: '' });
});
