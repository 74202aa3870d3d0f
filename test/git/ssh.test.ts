import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startGitServer, type GitServer } from '../helpers/git-server.js';
import { generateSshKey, sshAvailable, startSshd, type Sshd } from '../helpers/sshd.js';
import { openWorkspace } from '../../src/git/workspace.js';
import { commit } from '../../src/git/commit.js';
import { push } from '../../src/git/push.js';
import { GitError } from '../../src/git/exec.js';
import { ConfigError } from '../../src/util/errors.js';
import { silentLogger } from '../../src/util/log.js';
import { captureLogger, gitRepository, secret, tempDir } from './fixtures.js';

const skip = await sshAvailable();
/** CI needs this suite: there a missing sshd (or not running as root) fails it instead of skipping. */
const mustRun = process.env.CI === 'true';

describe('git over SSH (throwaway sshd on loopback)', { skip: mustRun ? false : (skip ?? false) }, () => {
  let server: GitServer;
  let sshd: Sshd;
  let state: { dir: string; cleanup: () => Promise<void> };

  before(async () => {
    if (skip) throw new Error(`CI needs the SSH suite, but it cannot run here: ${skip}`);
    server = await startGitServer();
    sshd = await startSshd();
    state = await tempDir();
    await server.createBareRepo('ssh', { 'deploy.yaml': 'image: app:1.0.0\n' });
  });
  after(async () => {
    await sshd.close();
    await server.close();
    await state.cleanup();
  });

  test('clone and push with an identity and known_hosts; key files removed afterwards', async () => {
    const cap = captureLogger();
    const creds = secret('ssh-creds', {
      identity: sshd.clientKey.privateKey,
      'identity.pub': sshd.clientKey.publicKey,
      known_hosts: sshd.knownHosts,
    });
    const repo = gitRepository(sshd.url(server.repoPath('ssh')), { name: 'ssh', secretRef: 'ssh-creds' });
    const ws = await openWorkspace({ stateDir: state.dir, repo, secret: creds, log: cap.log });
    assert.equal(ws.branch, 'main');
    await writeFile(join(ws.dir, 'deploy.yaml'), 'image: app:2.0.0\n');
    const sha = await commit(ws, {
      message: 'bump over ssh',
      author: { name: 'Bot', email: 'bot@example.com' },
    });
    const r = await push(ws);
    assert.equal(r.pushed, true);
    assert.equal(await server.revParse('ssh', 'refs/heads/main'), sha);
    assert.deepEqual(await readdir(join(state.dir, 'git', '.tmp')), []);
    assert.ok(!cap.text().includes('PRIVATE KEY'));
    const config = await readFile(join(ws.dir, '.git', 'config'), 'utf8');
    assert.ok(!config.includes('PRIVATE KEY'));
  });

  test('no known_hosts: a configuration error, never trust on first use', async () => {
    const creds = secret('ssh-nokh', { identity: sshd.clientKey.privateKey });
    const repo = gitRepository(sshd.url(server.repoPath('ssh')), { name: 'ssh-nokh' });
    await assert.rejects(
      openWorkspace({ stateDir: state.dir, repo, secret: creds, log: silentLogger }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.match(err.message, /known_hosts/);
        assert.match(err.message, /secrets\.yaml:1/);
        return true;
      },
    );
  });

  test('a host key that does not match known_hosts is refused', async () => {
    const scratch = await tempDir('pawl-ssh-keys-');
    try {
      const other = await generateSshKey(scratch.dir, 'other_host');
      const wrongKh = `[127.0.0.1]:${sshd.port} ${other.publicKey.trim().split(/\s+/).slice(0, 2).join(' ')}\n`;
      const creds = secret('ssh-wrongkh', { identity: sshd.clientKey.privateKey, known_hosts: wrongKh });
      const repo = gitRepository(sshd.url(server.repoPath('ssh')), { name: 'ssh-wrongkh' });
      await assert.rejects(
        openWorkspace({ stateDir: state.dir, repo, secret: creds, log: silentLogger }),
        (err: unknown) => {
          assert.ok(err instanceof GitError);
          assert.equal(err.failure, 'auth');
          assert.match(err.message, /host key/);
          return true;
        },
      );
    } finally {
      await scratch.cleanup();
    }
  });

  test('a key the server does not accept: authentication error', async () => {
    const scratch = await tempDir('pawl-ssh-keys-');
    try {
      const stranger = await generateSshKey(scratch.dir, 'stranger');
      const creds = secret('ssh-stranger', { identity: stranger.privateKey, known_hosts: sshd.knownHosts });
      const repo = gitRepository(sshd.url(server.repoPath('ssh')), { name: 'ssh-stranger' });
      await assert.rejects(
        openWorkspace({ stateDir: state.dir, repo, secret: creds, log: silentLogger }),
        (err: unknown) => {
          assert.ok(err instanceof GitError);
          assert.equal(err.failure, 'auth');
          assert.ok(!err.message.includes('PRIVATE KEY'));
          return true;
        },
      );
    } finally {
      await scratch.cleanup();
    }
  });

  test('a passphrase-protected identity with its password', async () => {
    const scratch = await tempDir('pawl-ssh-keys-');
    try {
      const locked = await generateSshKey(scratch.dir, 'locked', 'key-passphrase');
      const authorized = join(sshd.authorizedKeysFile);
      await writeFile(authorized, `${sshd.clientKey.publicKey}${locked.publicKey}`);
      const creds = secret('ssh-locked', {
        identity: locked.privateKey,
        password: 'key-passphrase',
        known_hosts: sshd.knownHosts,
      });
      const repo = gitRepository(sshd.url(server.repoPath('ssh')), { name: 'ssh-locked' });
      const ws = await openWorkspace({ stateDir: state.dir, repo, secret: creds, log: silentLogger });
      assert.equal(ws.branch, 'main');
    } finally {
      await scratch.cleanup();
    }
  });
});
