/**
 * Commits in a workspace: author and committer from the automation, trailers through git's
 * own `--trailer`, and signing through git's own signing (OpenPGP via a throwaway GNUPGHOME,
 * or SSH via `gpg.format=ssh`). Key material lives in 0700 temporary directories that are
 * removed as soon as the commit exists.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Secret } from '../config/index.js';
import { ConfigError, RuntimeError } from '../util/index.js';
import { baseEnv, GitError, redact } from './exec.js';
import { ensureAskpass, makeTempDir, shellQuote } from './auth.js';
import { TRAILER_AUTOMATION } from '../guard/index.js';
import type { Workspace } from './workspace.js';
import { commitFast, type OwnLine } from './fast-commit.js';

const execFileP = promisify(execFile);

/** The trailer that marks a commit as made by pawl (its name is defined with the others in guard/trailers.ts). */
export const PAWL_AUTOMATION_TRAILER = TRAILER_AUTOMATION;

export interface Identity {
  name: string;
  email: string;
}

export interface CommitOptions {
  message: string;
  author: Identity;
  /** Defaults to the author. */
  committer?: Identity;
  /** Appended as git trailers (`Key: value`), in the order given; arrays repeat the key. */
  trailers?: Record<string, string | string[]>;
  /** `ns/name` of the ImageUpdateAutomation; adds the `Pawl-Automation` trailer. */
  automation?: string;
  /** Secret with `git.asc` (+ `passphrase`) for OpenPGP, or `identity` (+ `password`) for SSH. */
  signingKey?: Secret;
  /** Overrides the detection from the Secret's keys. */
  signingKeyType?: 'gpg' | 'ssh';
  /** Commit only these paths (relative to the repository root); default: every change. */
  files?: string[];
  /**
   * The marked lines this commit rewrites, when it is the pass's only commit (fast-commit.ts):
   * while HEAD stays at it, their history is known without `git log -L`.
   */
  lines?: readonly OwnLine[];
  /** Author and committer date; default now. */
  date?: Date;
  /** State directory, for temporary key files (default: the OS temp dir). */
  stateDir?: string;
}

interface Signing {
  /** `-c key=value` pairs, placed before the subcommand. */
  config: string[];
  /** Flags for `git commit`. */
  flags: string[];
  env: Record<string, string>;
  secrets: string[];
  dispose(): Promise<void>;
}

function secretLabel(s: Secret): string {
  return `Secret ${s.metadata.namespace}/${s.metadata.name}`;
}

function signingProblem(s: Secret, message: string): ConfigError {
  return new ConfigError([{ location: s.source, object: secretLabel(s), message, severity: 'error' }]);
}

export function signingKeyType(secret: Secret, override?: 'gpg' | 'ssh'): 'gpg' | 'ssh' {
  if (override) return override;
  if (secret.data['git.asc'] !== undefined) return 'gpg';
  if (secret.data.identity !== undefined) return 'ssh';
  throw signingProblem(
    secret,
    'a signing key Secret needs "git.asc" (an armored OpenPGP private key) or "identity" (an SSH private key)',
  );
}

async function keyDir(stateDir: string | undefined): Promise<string> {
  // gpg-agent puts its sockets in GNUPGHOME; unix socket paths are limited to ~100 bytes.
  if (stateDir) {
    const dir = await makeTempDir(stateDir);
    if (dir.length < 70) return dir;
    await rm(dir, { recursive: true, force: true });
  }
  const dir = await mkdtemp(join(tmpdir(), 'pawl-sign-'));
  await chmod(dir, 0o700);
  return dir;
}

async function gpgSigning(secret: Secret, stateDir: string | undefined): Promise<Signing> {
  const armored = secret.data['git.asc']?.toString('utf8');
  if (!armored || !armored.includes('PRIVATE KEY BLOCK'))
    throw signingProblem(
      secret,
      '"git.asc" must hold an ASCII-armored OpenPGP private key (gpg --export-secret-keys --armor)',
    );
  const passphrase = secret.data.passphrase?.toString('utf8');
  const home = await keyDir(stateDir);
  const dispose = async (): Promise<void> => {
    await execFileP('gpgconf', ['--homedir', home, '--kill', 'all']).catch(() => undefined);
    await rm(home, { recursive: true, force: true });
  };
  try {
    const env = { ...baseEnv(), GNUPGHOME: home };
    const keyFile = join(home, 'key.asc');
    await writeFile(keyFile, armored, { mode: 0o600 });
    const gpgArgs = ['--homedir', home, '--batch', '--no-tty', '--pinentry-mode', 'loopback'];
    const passFile = join(home, 'passphrase');
    if (passphrase !== undefined) {
      await writeFile(passFile, passphrase, { mode: 0o600 });
      gpgArgs.push('--passphrase-file', passFile);
    }
    try {
      await execFileP('gpg', [...gpgArgs, '--import', keyFile], { env });
    } catch (err) {
      const msg = redact(String((err as { stderr?: string }).stderr ?? err), passphrase ? [passphrase] : []);
      throw signingProblem(secret, `gpg could not import "git.asc": ${msg.trim().split('\n').slice(-1)[0]}`);
    } finally {
      await rm(keyFile, { force: true });
    }
    const listed = await execFileP('gpg', [...gpgArgs, '--with-colons', '--list-secret-keys'], { env });
    const lines = listed.stdout.split('\n');
    const secIndex = lines.findIndex((l) => l.startsWith('sec:'));
    const fpr = lines
      .slice(secIndex + 1)
      .find((l) => l.startsWith('fpr:'))
      ?.split(':')[9];
    if (secIndex < 0 || !fpr) throw signingProblem(secret, '"git.asc" holds no secret key');
    const wrapper = join(home, 'gpg.sh');
    await writeFile(wrapper, `#!/bin/sh\nexec gpg ${gpgArgs.map(shellQuote).join(' ')} "$@"\n`, {
      mode: 0o700,
    });
    return {
      config: ['-c', 'gpg.format=openpgp', '-c', `gpg.program=${wrapper}`],
      flags: [`--gpg-sign=${fpr}`],
      env: { GNUPGHOME: home },
      secrets: passphrase ? [passphrase] : [],
      dispose,
    };
  } catch (err) {
    await dispose();
    throw err;
  }
}

async function sshSigning(secret: Secret, stateDir: string | undefined): Promise<Signing> {
  let key = secret.data.identity?.toString('utf8');
  if (!key || !/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(key))
    throw signingProblem(secret, '"identity" must hold an SSH private key (OpenSSH format)');
  if (!key.endsWith('\n')) key += '\n';
  const passphrase = secret.data.password?.toString('utf8');
  const dir = await keyDir(stateDir);
  const dispose = (): Promise<void> => rm(dir, { recursive: true, force: true });
  try {
    const keyFile = join(dir, 'signing_key');
    await writeFile(keyFile, key, { mode: 0o600 });
    const env: Record<string, string> = {};
    if (passphrase) {
      // ssh-keygen reads the passphrase through SSH_ASKPASS when forced to.
      env.SSH_ASKPASS = await ensureAskpass(stateDir ?? dir);
      env.SSH_ASKPASS_REQUIRE = 'force';
      env.PAWL_SSH_PASSPHRASE = passphrase;
      env.DISPLAY = env.DISPLAY ?? ':0';
    }
    return {
      config: ['-c', 'gpg.format=ssh', '-c', `user.signingkey=${keyFile}`],
      flags: ['--gpg-sign'],
      env,
      secrets: passphrase ? [passphrase] : [],
      dispose,
    };
  } catch (err) {
    await dispose();
    throw err;
  }
}

function literal(path: string): string {
  return `:(literal)${path}`;
}

/** Build `--trailer` arguments; values are single-line. */
export function trailerArgs(
  trailers: Record<string, string | string[]> | undefined,
  automation?: string,
): string[] {
  const out: string[] = [];
  const add = (k: string, v: string): void => {
    if (!/^[A-Za-z0-9][A-Za-z0-9-]*$/.test(k)) throw new RuntimeError(`invalid commit trailer key "${k}"`);
    out.push('--trailer', `${k}: ${v.replace(/\s*\n\s*/g, ' ').trim()}`);
  };
  for (const [k, v] of Object.entries(trailers ?? {})) {
    for (const one of Array.isArray(v) ? v : [v]) add(k, one);
  }
  if (automation) add(PAWL_AUTOMATION_TRAILER, automation);
  return out;
}

/** The name git records: the email when the name is blank. */
const ident = (i: Identity): string => (i.name.trim() ? i.name : i.email);

/** Without a final newline git glues the trailers onto the last line of the message. */
const withNewline = (message: string): string =>
  message.endsWith('\n') || message === '' ? message : `${message}\n`;

/**
 * What interpret-trailers answered, by its input: a daemon commits the same message with the same
 * trailers pass after pass, and git's answer depends only on them (pawl's workspaces set no
 * `trailer.*` configuration). Bounded: the oldest answer goes first.
 */
const trailered = new Map<string, string>();
const TRAILERED_MAX = 64;

/** The message `git commit --trailer …` records: git's own interpret-trailers, as commit runs it. */
async function finalMessage(ws: Workspace, opts: CommitOptions): Promise<string> {
  const trailers = trailerArgs(opts.trailers, opts.automation);
  const message = withNewline(opts.message);
  if (trailers.length === 0) return message;
  const key = JSON.stringify([trailers, message]);
  const known = trailered.get(key);
  if (known !== undefined) return known;
  const out = (await ws.git(['interpret-trailers', ...trailers], { input: message })).stdout;
  if (trailered.size >= TRAILERED_MAX) trailered.delete(trailered.keys().next().value!);
  trailered.set(key, out);
  return out;
}

/**
 * Stage and commit; returns the new commit's sha, or null when there is nothing to commit.
 * Given `files` and no signing key, the commit is written by `git fast-import` (fast-commit.ts),
 * the same commit in one pack instead of a loose object per blob and tree.
 */
export async function commit(ws: Workspace, opts: CommitOptions): Promise<string | null> {
  if (opts.files && opts.files.length === 0) return null;
  if (opts.files && !opts.signingKey) {
    const made = await commitFast(ws, opts.files, {
      author: { name: ident(opts.author), email: opts.author.email },
      committer: { name: ident(opts.committer ?? opts.author), email: (opts.committer ?? opts.author).email },
      date: opts.date ?? new Date(),
      message: () => finalMessage(ws, opts),
      ...(opts.lines ? { lines: opts.lines } : {}),
    });
    // commitFast moved HEAD to `made` itself (a compare-and-swap from the known HEAD).
    if (made !== undefined) return made === null ? null : ws.updateHead(made);
  }
  if (opts.files) await ws.git(['add', '--all', '--', ...opts.files.map(literal)]);
  else await ws.git(['add', '--all']);

  try {
    await ws.git(['diff', '--cached', '--quiet', '--no-ext-diff']);
    return null;
  } catch (err) {
    if (!(err instanceof GitError) || err.gitExitCode !== 1) throw err;
  }

  const author = opts.author;
  const committer = opts.committer ?? author;
  const when = (opts.date ?? new Date()).toISOString();
  const env: Record<string, string> = {
    GIT_AUTHOR_NAME: ident(author),
    GIT_AUTHOR_EMAIL: author.email,
    GIT_AUTHOR_DATE: when,
    GIT_COMMITTER_NAME: ident(committer),
    GIT_COMMITTER_EMAIL: committer.email,
    GIT_COMMITTER_DATE: when,
  };

  const signing = opts.signingKey
    ? signingKeyType(opts.signingKey, opts.signingKeyType) === 'gpg'
      ? await gpgSigning(opts.signingKey, opts.stateDir)
      : await sshSigning(opts.signingKey, opts.stateDir)
    : null;
  try {
    const pathspec = opts.files ? ['--', ...opts.files.map(literal)] : [];
    const args = [
      ...(signing?.config ?? []),
      'commit',
      '--quiet',
      '--no-verify',
      '--no-edit',
      '--allow-empty-message',
      '--cleanup=verbatim',
      '--file=-',
      ...trailerArgs(opts.trailers, opts.automation),
      ...(signing?.flags ?? ['--no-gpg-sign']),
      ...(opts.files ? ['--only', ...pathspec] : []),
    ];
    try {
      await ws.git(args, {
        input: withNewline(opts.message),
        env: { ...env, ...(signing?.env ?? {}) },
        secrets: signing?.secrets ?? [],
      });
    } catch (err) {
      if (signing && err instanceof GitError && /sign|gpg|ssh-keygen/i.test(err.stderr))
        throw new GitError(
          `signing the commit failed: ${err.stderr}`,
          err.command,
          err.gitExitCode,
          err.stderr,
          'other',
        );
      throw err;
    }
  } finally {
    await signing?.dispose();
  }
  return ws.updateHead();
}
