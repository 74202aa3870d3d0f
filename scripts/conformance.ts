/**
 * `npm run conformance [DIR]`: Flux's own policy tables and setter fixtures, read from
 * ../shared/conformance/flux (or DIR, or $PAWL_CONFORMANCE_DIR). Exits 1 on any failure.
 */
import { resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { existsSync } from 'node:fs';
import { runPolicyConformance } from './conformance/policy.js';
import { runSetterConformance } from './conformance/setters.js';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const dir = resolve(
  process.argv[2] ?? process.env.PAWL_CONFORMANCE_DIR ?? resolve(root, '..', 'shared', 'conformance', 'flux'),
);
if (!existsSync(dir)) {
  process.stderr.write(`conformance: ${dir} does not exist; pass the path to Flux's fixtures\n`);
  process.exit(2);
}

const policy = runPolicyConformance(dir);
const setters = await runSetterConformance(dir);
let failed = 0;
for (const [name, r] of [
  ['policy', policy],
  ['setters', setters],
] as const) {
  process.stdout.write(`${name}: ${r.passed} passed, ${r.failed.length} failed\n`);
  for (const f of r.failed) process.stdout.write(`  FAIL ${f.id}: ${f.message}\n`);
  failed += r.failed.length;
}
process.stdout.write(`conformance: ${policy.passed + setters.passed} passed, ${failed} failed\n`);
process.exitCode = failed === 0 ? 0 : 1;
