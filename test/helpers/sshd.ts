/**
 * A throwaway OpenSSH server on loopback for git-over-SSH tests. It serves the bare
 * repositories of a git-server helper (`ssh://<user>@127.0.0.1:PORT<root>/<name>.git`).
 *
 * `sshAvailable()` says whether it can run here (sshd binary, running as root or as a user
 * whose login shell works); tests skip with that reason otherwise.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, mkdir, readFile, rm, writeFile, chmod, access } from 'node:fs/promises';
import { createServer, connect } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);

const SSHD_CANDIDATES = ['/usr/sbin/sshd', '/usr/local/sbin/sshd', '/sbin/sshd'];

export interface SshKeyPair {
  privateKey: string;
  publicKey: string;
}

export interface Sshd {
  port: number;
  user: string;
  /** `known_hosts` content for this server (`[127.0.0.1]:PORT ssh-ed25519 …`). */
  knownHosts: string;
  /** A client key that the server accepts. */
  clientKey: SshKeyPair;
  /** The server's authorized_keys file; a test may append keys to it. */
  authorizedKeysFile: string;
  /** `ssh://user@127.0.0.1:PORT/abs/path` for a bare repository directory. */
  url(repoDir: string): string;
  close(): Promise<void>;
}

async function findSshd(): Promise<string | null> {
  for (const p of SSHD_CANDIDATES) {
    try {
      await access(p);
      return p;
    } catch {
      continue;
    }
  }
  return null;
}

/** null when sshd can run here; otherwise the reason to skip. */
export async function sshAvailable(): Promise<string | null> {
  if (!(await findSshd())) return 'sshd is not installed';
  if (process.getuid?.() !== 0)
    return 'the sshd helper needs root (it logs in as the current user with PermitRootLogin)';
  return null;
}

export async function generateSshKey(dir: string, name: string, passphrase = ''): Promise<SshKeyPair> {
  const file = join(dir, name);
  await execFileP('ssh-keygen', ['-q', '-t', 'ed25519', '-N', passphrase, '-C', name, '-f', file]);
  return { privateKey: await readFile(file, 'utf8'), publicKey: await readFile(`${file}.pub`, 'utf8') };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

async function waitForBanner(port: number, deadline: number): Promise<void> {
  while (Date.now() < deadline) {
    const ok = await new Promise<boolean>((resolve) => {
      const sock = connect(port, '127.0.0.1');
      sock.once('data', (d: Buffer) => {
        sock.destroy();
        resolve(d.toString().startsWith('SSH-'));
      });
      sock.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`sshd did not start listening on port ${port}`);
}

export async function startSshd(): Promise<Sshd> {
  const reason = await sshAvailable();
  if (reason) throw new Error(reason);
  const sshd = (await findSshd())!;
  const dir = await mkdtemp(join(tmpdir(), 'pawl-sshd-'));
  await chmod(dir, 0o700);
  const hostKey = await generateSshKey(dir, 'host_key');
  const clientKey = await generateSshKey(dir, 'client_key');
  await writeFile(join(dir, 'authorized_keys'), clientKey.publicKey, { mode: 0o600 });
  // sshd insists on its privilege-separation directory.
  await mkdir('/run/sshd', { recursive: true, mode: 0o755 }).catch(() => undefined);

  const user = userInfo().username;
  let child: ChildProcess | null = null;
  let port = 0;
  let lastErr = '';
  for (let attempt = 0; attempt < 5 && !child; attempt++) {
    port = await freePort();
    const config = [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${join(dir, 'host_key')}`,
      `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      'PermitRootLogin prohibit-password',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PubkeyAuthentication yes',
      'StrictModes no',
      'UsePAM no',
      'PrintMotd no',
      'AcceptEnv GIT_PROTOCOL',
      'LogLevel ERROR',
      '',
    ].join('\n');
    const configFile = join(dir, 'sshd_config');
    await writeFile(configFile, config);
    const proc = spawn(sshd, ['-D', '-e', '-f', configFile], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    proc.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    try {
      await Promise.race([
        waitForBanner(port, Date.now() + 5000),
        exited.then(() => {
          throw new Error(stderr || 'sshd exited');
        }),
      ]);
      child = proc;
    } catch (err) {
      lastErr = err instanceof Error ? err.message : String(err);
      proc.kill('SIGTERM');
    }
  }
  if (!child) {
    await rm(dir, { recursive: true, force: true });
    throw new Error(`could not start sshd: ${lastErr}`);
  }
  const running = child;
  const hostPub = hostKey.publicKey.trim().split(/\s+/).slice(0, 2).join(' ');
  return {
    port,
    user,
    knownHosts: `[127.0.0.1]:${port} ${hostPub}\n`,
    clientKey,
    authorizedKeysFile: join(dir, 'authorized_keys'),
    url: (repoDir) => `ssh://${user}@127.0.0.1:${port}${repoDir}`,
    async close() {
      if (running.exitCode === null) {
        const done = new Promise<void>((resolve) => running.once('exit', () => resolve()));
        running.kill('SIGTERM');
        await done;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
