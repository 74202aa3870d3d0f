/**
 * `https://user:pass@host/…` Git URLs (here http on loopback, with the smart-HTTP server's Basic
 * auth): the run authenticates with them, but the workspace's .git/config, the output and the
 * state never hold the password; `pawl validate` warns about it at the line.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { pushTags } from '../helpers/push.js';
import {
  GIT_PASSWORD,
  GIT_USER,
  gitObjects,
  imageObjects,
  startWorld,
  type World,
} from '../helpers/world.js';
import type { RunReport } from '../../src/run/report.js';

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true }))
    if (e.isFile()) out.push(join(e.parentPath, e.name));
  return out;
}

describe('credentials written into a Git URL', () => {
  let w: World;
  before(async () => {
    w = await startWorld({
      files: { 'deploy.yaml': 'image: {{REGISTRY}}/org/app:1.0.0 # {"$imagepolicy": "flux-system:app"}\n' },
      config: {
        'app.yaml': imageObjects('app', '{{REGISTRY}}/org/app', 'semver:\n  range: ">=1.0.0"'),
      },
    });
    const url = w.git.cloneUrl(w.repoName).replace('http://', `http://${GIT_USER}:${GIT_PASSWORD}@`);
    await w.writeConfig(
      'git.yaml',
      gitObjects().replace('{{GIT_URL}}', url).replace('  secretRef:\n    name: git-credentials\n', ''),
    );
    await pushTags(w.registry.url, 'org/app', ['1.0.0', '1.1.0']);
  });
  after(() => w?.close());

  test('validate warns at the line without printing the password', async () => {
    const r = await w.pawl(['validate']);
    assert.equal(r.code, 0, r.stderr);
    const all = r.stdout + r.stderr;
    assert.match(
      all,
      /git\.yaml:\d+: .*GitRepository flux-system\/fleet.*spec\.url.*password written into the URL/,
    );
    assert.ok(!all.includes(GIT_PASSWORD), all);
  });

  test('the run pushes with them; .git/config and the state directory never hold the password', async () => {
    const { json, code, stderr } = await w.pawlJson<RunReport>(['run']);
    assert.equal(code, 0, stderr);
    assert.equal(json.automations[0]!.result, 'pushed', json.automations[0]!.error ?? '');
    assert.ok(w.git.requests.some((r) => r.user === GIT_USER && r.status === 200));
    const config = await readFile(join(w.stateDir, 'git', 'flux-system', 'fleet', '.git', 'config'), 'utf8');
    assert.match(config, /url = http:\/\/127\.0\.0\.1:\d+\/fleet\.git/);
    for (const f of await filesUnder(w.stateDir)) {
      const bytes = await readFile(f);
      assert.ok(!bytes.includes(GIT_PASSWORD), `the password in ${f}`);
    }
    assert.ok(!stderr.includes(GIT_PASSWORD) && !JSON.stringify(json).includes(GIT_PASSWORD));
  });
});
