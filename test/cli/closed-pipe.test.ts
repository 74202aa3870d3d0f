/**
 * A reader that closes the pipe early (`pawl … | head`) ends the output, not the command: no
 * stack trace, and the command's own exit status.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from '../helpers/world.js';

test('stdout closed before pawl writes: the command ends with its own status and says nothing of it', async () => {
  const child = spawn(
    process.execPath,
    ['--import', import.meta.resolve('tsx'), join(ROOT, 'src', 'cli', 'main.ts'), 'completion', 'bash'],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  // Closed at once: pawl starts long after, so every write it makes meets a pipe with no reader.
  child.stdout.destroy();
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const code = await new Promise<number | null>((r) => child.on('close', (c) => r(c)));
  assert.equal(stderr, '');
  assert.equal(code, 0);
});
