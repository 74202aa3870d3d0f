import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runPolicyConformance } from '../../scripts/conformance/policy.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = process.env.PAWL_CONFORMANCE_DIR ?? resolve(root, '..', 'shared', 'conformance', 'flux');

test(
  "every case of Flux's policy-cases.json passes",
  { skip: !existsSync(resolve(dir, 'policy-cases.json')) && `no fixtures at ${dir}` },
  () => {
    const r = runPolicyConformance(dir);
    assert.deepEqual(r.failed, []);
    assert.ok(r.passed >= 79, `only ${r.passed} cases ran`);
  },
);
