/**
 * A whole `pawl run` with the default, relative state directory (`./.pawl`, resolved against
 * the directory pawl is started in) and Git credentials that are handed over as files in it:
 * HTTPS Basic auth through GIT_ASKPASS, and SSH through a key file and known_hosts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { access, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pushTags } from '../helpers/push.js';
import { gitObjects, imageObjects, runCli, startWorld, type World } from '../helpers/world.js';
import { sshAvailable, startSshd, type Sshd } from '../helpers/sshd.js';
import type { RunReport } from '../../src/run/report.js';

const FILES = {
  'apps/deploy.yaml': 'image: {{REGISTRY}}/apps/web:1.0.0 # {"$imagepolicy": "flux-system:web"}\n',
};

async function runInDir(w: World, cwd: string): Promise<RunReport> {
  assert.equal(process.env.PAWL_STATE_DIR, undefined, 'the test names no state directory');
  const r = await runCli(['run', '-c', w.configDir, '--json'], { cwd });
  let json: RunReport;
  try {
    json = JSON.parse(r.stdout) as RunReport;
  } catch {
    throw new Error(`pawl run printed no JSON (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
  }
  assert.equal(r.code, 0, `${r.stderr}\n${JSON.stringify(json, null, 2)}`);
  return json;
}

describe('the default relative state directory', () => {
  let w: World;
  let cwd: string;
  before(async () => {
    w = await startWorld({
      files: FILES,
      config: {
        'git.yaml': gitObjects(),
        'web.yaml': imageObjects('web', '{{REGISTRY}}/apps/web', 'semver:\n  range: ">=1.0.0"'),
      },
    });
    await pushTags(w.registry.url, 'apps/web', ['1.0.0', '1.1.0']);
    cwd = await mkdtemp(join(tmpdir(), 'pawl-cwd-'));
  });
  after(async () => {
    await w?.close();
    if (cwd) await rm(cwd, { recursive: true, force: true });
  });

  test('HTTPS Basic auth: the run clones, commits and pushes with ./.pawl', async () => {
    const json = await runInDir(w, cwd);
    const a = json.automations[0]!;
    assert.equal(a.result, 'pushed', a.error ?? '');
    assert.ok(
      w.git.requests.some((r) => r.user === 'flux' && r.status === 200),
      'git used the Basic credentials',
    );
    assert.match(await w.git.show(w.repoName, 'main', 'apps/deploy.yaml'), /web:1\.1\.0 #/);
    await access(join(cwd, '.pawl', 'pawl.db'));
  });
});

const sshSkip = await sshAvailable();
const mustRun = process.env.CI === 'true';

describe(
  'the default relative state directory over SSH',
  { skip: mustRun ? false : (sshSkip ?? false) },
  () => {
    let w: World;
    let sshd: Sshd;
    let cwd: string;
    before(async () => {
      if (sshSkip) throw new Error(`CI needs the SSH suite, but: ${sshSkip}`);
      w = await startWorld({ files: FILES, config: {} });
      sshd = await startSshd();
      const url = sshd.url(w.git.repoPath(w.repoName));
      const indent = (s: string) =>
        s
          .trimEnd()
          .split('\n')
          .map((l) => `    ${l}`)
          .join('\n');
      const objects = gitObjects()
        .replace('{{GIT_URL}}', url)
        .replace(
          /type: kubernetes\.io\/basic-auth\nstringData:\n(?: {2}.*\n)+/,
          `stringData:\n  identity: |\n${indent(sshd.clientKey.privateKey)}\n  known_hosts: |\n${indent(sshd.knownHosts)}\n`,
        );
      await writeFile(join(w.configDir, 'git.yaml'), objects);
      await w.writeConfig(
        'web.yaml',
        imageObjects('web', '{{REGISTRY}}/apps/web', 'semver:\n  range: ">=1.0.0"'),
      );
      await pushTags(w.registry.url, 'apps/web', ['1.0.0', '1.2.0']);
      cwd = await mkdtemp(join(tmpdir(), 'pawl-cwd-ssh-'));
    });
    after(async () => {
      await sshd?.close();
      await w?.close();
      if (cwd) await rm(cwd, { recursive: true, force: true });
    });

    test('SSH: the key file and known_hosts in ./.pawl are found by ssh', async () => {
      const json = await runInDir(w, cwd);
      const a = json.automations[0]!;
      assert.equal(a.result, 'pushed', a.error ?? '');
      assert.match(await w.git.show(w.repoName, 'main', 'apps/deploy.yaml'), /web:1\.2\.0 #/);
    });
  },
);
