/**
 * The README's "Use" in a checkout, where `pawl` is not on PATH: `npx pawl` from the checkout
 * finds the project's own bin/pawl.js (never the registry: --no-install), and `node bin/pawl.js`
 * runs the sources; both run a real command against a configuration.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { imageObjects, ROOT } from '../helpers/world.js';

function run(cmd: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) =>
    execFile(cmd, args, { cwd: ROOT }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    ),
  );
}

test('npx pawl and node bin/pawl.js run pawl from a checkout', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'pawl-checkout-use-'));
  try {
    await writeFile(
      join(dir, 'app.yaml'),
      imageObjects('app', 'registry.example/app', 'semver:\n  range: ">=1.0.0"'),
    );
    for (const [cmd, args] of [
      ['npx', ['--no-install', 'pawl']],
      [process.execPath, [join(ROOT, 'bin', 'pawl.js')]],
    ] as const) {
      const r = await run(cmd, [...args, 'validate', '-c', dir]);
      assert.equal(r.code, 0, `${cmd} ${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stdout, /valid: 1 ImageRepository, 1 ImagePolicy/);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
