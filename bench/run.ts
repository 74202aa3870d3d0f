/**
 * `npm run bench [NAME…]`: runs each bench/<name>.bench.ts in its own process (so peak RSS
 * figures are per benchmark) and prints their output. Figures are reported, never asserted
 * in tests.
 */
import { readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = dirname(fileURLToPath(import.meta.url));
const wanted = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => wanted.length === 0 || wanted.includes(f.replace(/\.bench\.ts$/, '')))
  .sort();
let failures = 0;
for (const f of files) {
  process.stdout.write(`\n== ${f} ==\n`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(dir, f)], { stdio: 'inherit' });
  if (r.status !== 0) failures++;
}
process.exitCode = failures === 0 ? 0 : 1;
