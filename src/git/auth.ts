/**
 * Credentials for git from a GitRepository's Secret, handed to git only through its
 * environment and short-lived files: never in a URL, an argument list or a log.
 *
 * - HTTPS `username`/`password`: GIT_ASKPASS points to a small script (written once into the
 *   state directory) that prints them from environment variables.
 * - HTTPS `bearerToken`: an `http.<url>.extraHeader` set through GIT_CONFIG_COUNT/KEY/VALUE.
 * - `ca.crt`: a temporary CA bundle for GIT_SSL_CAINFO.
 * - SSH `identity` (+ `password` as its passphrase) and `known_hosts`: a temporary key file and
 *   GIT_SSH_COMMAND with strict host-key checking. No `known_hosts` is an error, never
 *   trust-on-first-use.
 * - `file://` URLs and local paths need nothing.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile, chmod } from 'node:fs/promises';
import { join } from 'node:path';
import type { Secret } from '../config/index.js';
import { ConfigError, type Problem } from '../util/index.js';
import { redact } from './exec.js';

export type GitTransport = 'https' | 'http' | 'ssh' | 'git' | 'file' | 'local';

export function transportOf(url: string): GitTransport {
  const m = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url);
  if (m) {
    const scheme = m[1]!.toLowerCase();
    if (scheme === 'https') return 'https';
    if (scheme === 'http') return 'http';
    if (scheme === 'ssh' || scheme === 'git+ssh' || scheme === 'ssh+git') return 'ssh';
    if (scheme === 'file') return 'file';
    if (scheme === 'git') return 'git';
    return 'local';
  }
  // scp-like `user@host:path` (a colon before any slash), as git itself decides.
  const colon = url.indexOf(':');
  const slash = url.indexOf('/');
  if (colon > 0 && (slash < 0 || colon < slash)) return 'ssh';
  return 'local';
}

export interface GitAuth {
  /** Environment for the git process. */
  env: Record<string, string>;
  /** Values to redact from anything git prints. */
  secrets: string[];
  /** Remove temporary key files. Safe to call twice. */
  dispose(): Promise<void>;
}

const NO_AUTH: GitAuth = { env: {}, secrets: [], dispose: async () => undefined };

const ASKPASS_SCRIPT = `#!/bin/sh
# Written by pawl. Answers git's and ssh's prompts from the environment of the one git
# command pawl runs; it holds no credentials itself.
case "$1" in
  [Uu]sername*) printf '%s\\n' "$PAWL_GIT_USERNAME" ;;
  *assphrase*) printf '%s\\n' "$PAWL_SSH_PASSPHRASE" ;;
  *) printf '%s\\n' "$PAWL_GIT_PASSWORD" ;;
esac
`;

function value(secret: Secret, key: string): string | undefined {
  const v = secret.data[key];
  return v === undefined ? undefined : v.toString('utf8');
}

function secretName(secret: Secret): string {
  return `Secret ${secret.metadata.namespace}/${secret.metadata.name}`;
}

function problem(secret: Secret, message: string): Problem {
  return { location: secret.source, object: secretName(secret), message, severity: 'error' };
}

/**
 * What is wrong with using `secret` for `url` (empty when fine). For `pawl validate` and
 * for `prepareAuth`, which throws these as a ConfigError.
 */
export function checkAuthSecret(url: string, secret: Secret): Problem[] {
  const t = transportOf(url);
  const problems: Problem[] = [];
  if (t === 'https' || t === 'http') {
    const hasUser = value(secret, 'username') !== undefined;
    const hasPass = value(secret, 'password') !== undefined;
    const hasToken = value(secret, 'bearerToken') !== undefined;
    if (hasUser !== hasPass && !hasToken)
      problems.push(
        problem(
          secret,
          `for an HTTP(S) URL the secret needs both "username" and "password" (or "bearerToken")`,
        ),
      );
    if (!hasUser && !hasPass && !hasToken && value(secret, 'ca.crt') === undefined)
      problems.push(
        problem(
          secret,
          `has none of "username"/"password", "bearerToken" or "ca.crt" for the HTTP(S) URL ${redactUrl(url)}`,
        ),
      );
  } else if (t === 'ssh') {
    const identity = value(secret, 'identity');
    if (identity === undefined)
      problems.push(problem(secret, `for an SSH URL the secret needs "identity" (a private key)`));
    else if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(identity))
      problems.push(problem(secret, `"identity" is not a PEM/OpenSSH private key`));
    const kh = value(secret, 'known_hosts');
    if (kh === undefined || kh.trim() === '')
      problems.push(
        problem(
          secret,
          `for an SSH URL the secret needs "known_hosts"; pawl does not trust host keys on first use (get them with: ssh-keyscan HOST)`,
        ),
      );
  }
  return problems;
}

/**
 * The user name and password written into an HTTP(S) URL (`https://user:pass@host/…`), decoded;
 * null when it has no password. They are handed to git like a Secret's, never left in the URL.
 */
export function credentialsInUrl(url: string): { username: string; password: string } | null {
  const t = transportOf(url);
  if (t !== 'https' && t !== 'http') return null;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  if (u.password === '') return null;
  return { username: decodeURIComponent(u.username), password: decodeURIComponent(u.password) };
}

/** An HTTP(S) URL without the credentials written into it; any other URL as it is. */
export function withoutUrlCredentials(url: string): string {
  const t = transportOf(url);
  if ((t !== 'https' && t !== 'http') || credentialsInUrl(url) === null) return url;
  // Only the userinfo is cut: the rest stays byte for byte as the person wrote it.
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i, '$1');
}

/** A URL for messages: its userinfo masked (`https://***@host/…`). */
export function redactUrl(url: string): string {
  return redact(url);
}

/** Writes the askpass script once (or again when pawl's version of it changed); returns its path. */
export async function ensureAskpass(stateDir: string): Promise<string> {
  const dir = join(stateDir, 'git');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, 'askpass.sh');
  let current = '';
  try {
    current = await readFile(file, 'utf8');
  } catch {
    current = '';
  }
  if (current !== ASKPASS_SCRIPT) {
    // Unique per call: concurrent passes in one process (the daemon) write it at the same time.
    const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    await writeFile(tmp, ASKPASS_SCRIPT, { mode: 0o700 });
    await rename(tmp, file);
  }
  await chmod(file, 0o700);
  return file;
}

/** Directory for short-lived credential files; everything in it may be deleted when no pawl runs. */
export function tempRoot(stateDir: string): string {
  return join(stateDir, 'git', '.tmp');
}

export async function makeTempDir(stateDir: string): Promise<string> {
  const root = tempRoot(stateDir);
  await mkdir(root, { recursive: true, mode: 0o700 });
  const dir = join(root, `${process.pid}-${randomBytes(6).toString('hex')}`);
  await mkdir(dir, { mode: 0o700 });
  return dir;
}

/** Single-quote for the shell that git runs GIT_SSH_COMMAND through. */
export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

export interface PrepareAuthOptions {
  stateDir: string;
  /** The URL git is given (without credentials in it). */
  url: string;
  secret?: Secret;
  /** A user name and password that were written into the configured URL (`credentialsInUrl`). */
  urlCredentials?: { username: string; password: string } | null;
}

/** Environment and temporary files for one git operation against `url`; call `dispose()` afterwards. */
export async function prepareAuth(opts: PrepareAuthOptions): Promise<GitAuth> {
  const { url, stateDir } = opts;
  const t = transportOf(url);
  if (t === 'file' || t === 'local' || t === 'git') return NO_AUTH;
  const fromUrl = t === 'https' || t === 'http' ? (opts.urlCredentials ?? null) : null;
  if (!opts.secret && !fromUrl) return NO_AUTH;
  // A URL's own credentials behave as a basic-auth Secret; a Secret's user name and password win.
  const secret: Secret = opts.secret ?? {
    kind: 'Secret',
    apiVersion: 'v1',
    metadata: { namespace: '', name: '(credentials in the URL)', labels: {}, annotations: {} },
    source: { file: '' },
    type: 'kubernetes.io/basic-auth',
    data: {},
  };
  if (opts.secret) {
    const problems = checkAuthSecret(url, secret);
    if (problems.length > 0) throw new ConfigError(problems);
  }

  const env: Record<string, string> = {};
  const secrets: string[] = [];
  let tmp: string | null = null;
  const tempDir = async (): Promise<string> => (tmp ??= await makeTempDir(stateDir));
  const dispose = async (): Promise<void> => {
    if (tmp) await rm(tmp, { recursive: true, force: true });
    tmp = null;
  };

  try {
    if (t === 'https' || t === 'http') {
      const fromSecret = value(secret, 'username') !== undefined && value(secret, 'password') !== undefined;
      const username = fromSecret ? value(secret, 'username') : fromUrl?.username;
      const password = fromSecret ? value(secret, 'password') : fromUrl?.password;
      const token = value(secret, 'bearerToken');
      const ca = value(secret, 'ca.crt') ?? value(secret, 'caFile');
      if (username !== undefined && password !== undefined) {
        env.GIT_ASKPASS = await ensureAskpass(stateDir);
        env.PAWL_GIT_USERNAME = username;
        env.PAWL_GIT_PASSWORD = password;
        secrets.push(password);
      }
      if (token !== undefined) {
        // Scoped to this URL so that a redirect elsewhere does not carry the token.
        env.GIT_CONFIG_COUNT = '1';
        env.GIT_CONFIG_KEY_0 = `http.${url}.extraHeader`;
        env.GIT_CONFIG_VALUE_0 = `Authorization: Bearer ${token}`;
        secrets.push(token);
      }
      if (ca !== undefined) {
        const file = join(await tempDir(), 'ca.crt');
        await writeFile(file, ca, { mode: 0o600 });
        env.GIT_SSL_CAINFO = file;
      }
    } else if (t === 'ssh') {
      const dir = await tempDir();
      const keyFile = join(dir, 'identity');
      let key = value(secret, 'identity')!;
      if (!key.endsWith('\n')) key += '\n';
      await writeFile(keyFile, key, { mode: 0o600 });
      const pub = value(secret, 'identity.pub');
      if (pub !== undefined) await writeFile(`${keyFile}.pub`, pub, { mode: 0o600 });
      const khFile = join(dir, 'known_hosts');
      await writeFile(khFile, value(secret, 'known_hosts')!, { mode: 0o600 });
      const passphrase = value(secret, 'password');
      const parts = [
        'ssh',
        '-i',
        shellQuote(keyFile),
        '-o IdentitiesOnly=yes',
        '-o IdentityAgent=none',
        `-o UserKnownHostsFile=${shellQuote(khFile)}`,
        '-o GlobalKnownHostsFile=/dev/null',
        '-o StrictHostKeyChecking=yes',
        '-o PasswordAuthentication=no',
        '-o KbdInteractiveAuthentication=no',
      ];
      if (passphrase !== undefined && passphrase !== '') {
        // ssh asks for the key's passphrase through SSH_ASKPASS; BatchMode would forbid that.
        env.SSH_ASKPASS = await ensureAskpass(stateDir);
        env.SSH_ASKPASS_REQUIRE = 'force';
        env.PAWL_SSH_PASSPHRASE = passphrase;
        secrets.push(passphrase);
      } else {
        parts.push('-o BatchMode=yes');
      }
      env.GIT_SSH_COMMAND = parts.join(' ');
      env.GIT_SSH_VARIANT = 'ssh';
    }
  } catch (err) {
    await dispose();
    throw err;
  }
  return { env, secrets, dispose };
}

/** Run `fn` with credentials for `url`, removing temporary files afterwards whatever happens. */
export async function withAuth<T>(opts: PrepareAuthOptions, fn: (auth: GitAuth) => Promise<T>): Promise<T> {
  const auth = await prepareAuth(opts);
  try {
    return await fn(auth);
  } finally {
    await auth.dispose();
  }
}
