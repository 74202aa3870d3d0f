/**
 * Signed commits end to end, the way Flux v1 configures them: `signingKey: {type: ssh,
 * secretRef}` with an `identity` Secret, and the default OpenPGP form with `git.asc`. pawl runs
 * through the CLI against the real registry and git server; the pushed commit is checked by
 * `git verify-commit` in the server's repository.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runGit } from '../helpers/git-server.js';
import { gpgKey } from '../helpers/gpg.js';
import { pushTags } from '../helpers/push.js';
import { generateSshKey } from '../helpers/sshd.js';
import { gitObjects, imageObjects, startWorld, type World } from '../helpers/world.js';
import type { RunReport } from '../../src/run/report.js';

const AUTHOR = 'pawl@example.com';

function signedGitObjects(signingKey: string, secretData: Record<string, string>): string {
  const data = Object.entries(secretData)
    .map(([k, v]) => `  ${k}: ${Buffer.from(v).toString('base64')}\n`)
    .join('');
  return (
    gitObjects().replace(
      `        email: ${AUTHOR}\n`,
      `        email: ${AUTHOR}\n      signingKey:\n${signingKey}`,
    ) +
    `---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: signing\n  namespace: flux-system\ndata:\n${data}`
  );
}

describe('signed commits end to end', () => {
  let w: World;
  let scratch: string;
  before(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'pawl-signing-'));
    w = await startWorld({
      files: { 'app.yaml': 'image: {{REGISTRY}}/apps/app:1.0.0 # {"$imagepolicy": "flux-system:app"}\n' },
      config: {
        'app.yaml': imageObjects('app', '{{REGISTRY}}/apps/app', 'semver:\n  range: ">=1.0.0"'),
      },
    });
  });
  after(async () => {
    await w?.close();
    await rm(scratch, { recursive: true, force: true });
  });

  async function runOnce(): Promise<string> {
    const { json, code, stderr } = await w.pawlJson<RunReport>(['run', '--refresh']);
    assert.equal(code, 0, stderr);
    const [a] = json.automations;
    assert.equal(a?.result, 'pushed', a?.error ?? stderr);
    return a.commit!;
  }

  test('type ssh with an identity Secret: the pushed commit verifies against allowed signers', async () => {
    const key = await generateSshKey(scratch, 'signer', 'key pass');
    await w.writeConfig(
      'git.yaml',
      signedGitObjects('        type: ssh\n        secretRef:\n          name: signing\n', {
        identity: key.privateKey,
        password: 'key pass',
      }),
    );
    await pushTags(w.registry.url, 'apps/app', ['1.0.0', '1.1.0']);
    const sha = await runOnce();

    const repo = w.git.repoPath(w.repoName);
    const allowed = join(scratch, 'allowed_signers');
    await writeFile(allowed, `${AUTHOR} ${key.publicKey}`);
    const cfg = ['-c', `gpg.ssh.allowedSignersFile=${allowed}`];
    await runGit([...cfg, 'verify-commit', sha], repo); // throws unless the signature is good
    assert.equal((await runGit([...cfg, 'log', '-1', '--format=%G?', sha], repo)).trim(), 'G');

    // The same check fails for a key that did not sign: the test can tell.
    const other = await generateSshKey(scratch, 'other');
    await writeFile(allowed, `${AUTHOR} ${other.publicKey}`);
    await assert.rejects(runGit([...cfg, 'verify-commit', sha], repo));
  });

  test('type gpg (and the default without type) with git.asc: verified with the public key', async () => {
    const home = join(scratch, 'gnupg');
    await mkdir(home, { mode: 0o700 });
    const { armored, fpr } = await gpgKey(home, 'gpg pass');
    for (const [form, tags] of [
      ['        type: gpg\n        secretRef:\n          name: signing\n', ['1.2.0']],
      ['        secretRef:\n          name: signing\n', ['1.3.0']],
    ] as const) {
      await w.writeConfig('git.yaml', signedGitObjects(form, { 'git.asc': armored, passphrase: 'gpg pass' }));
      await pushTags(w.registry.url, 'apps/app', [...tags]);
      const sha = await runOnce();
      const repo = w.git.repoPath(w.repoName);
      await runGit(['verify-commit', sha], repo, { GNUPGHOME: home });
      assert.equal(
        (await runGit(['log', '-1', '--format=%G? %GF', sha], repo, { GNUPGHOME: home })).trim(),
        `G ${fpr}`,
      );
    }
  });
});
