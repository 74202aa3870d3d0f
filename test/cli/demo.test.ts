/** The README's demo must keep working: run it and check what it shows. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from '../helpers/world.js';

test('npm run demo: one pushed commit, a hand-written newer tag kept and explained, then the daemon turns a registry push into a commit', async () => {
  const out = await new Promise<string>((resolve, reject) =>
    execFile(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'scripts', 'demo.ts')],
      { cwd: ROOT, maxBuffer: 16 << 20 },
      (err, stdout, stderr) =>
        err ? reject(new Error(`${err.message}\n${stdout}\n${stderr}`)) : resolve(stdout),
    ),
  );
  assert.match(out, /automation flux-system\/fleet: pushed [0-9a-f]{12} to main/);
  assert.match(out, /\+\s+newTag: 6\.2\.0 # \{"\$imagepolicy": "flux-system:podinfo:tag"\}/);
  assert.match(out, /automation flux-system\/fleet: up-to-date/);
  assert.match(out, /\(downgrade blocked\)/);
  assert.match(out, /pawl rollback flux-system\/worker --to main-0a0b0c-1720000000/);
  assert.match(out, /pass of flux-system\/fleet: pushed ([0-9a-f]{12})/);
  assert.match(out, /commit [0-9a-f]{12} is on the remote \d+ ms after the registry answered the push/);
});
