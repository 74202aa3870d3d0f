/**
 * The one way pawl runs git: the real `git` CLI through pawl's one process runner
 * (src/util/process.ts: process group, timeout, abort, exit hook), with an environment that never
 * prompts, never depends on the user's or the system's git config, and never lets a credential
 * reach an error message.
 */
import { StringDecoder } from 'node:string_decoder';
import { redactText, RuntimeError, spawnProcess } from '../util/index.js';

export interface GitOptions {
  cwd: string;
  /** Added to (and overriding) pawl's base environment. */
  env?: Record<string, string>;
  /** Default 120 s. */
  timeoutMs?: number;
  input?: string | Buffer;
  signal?: AbortSignal;
  /** Exact values to blank out of any error (passwords, tokens) besides the generic patterns. */
  secrets?: string[];
}

export interface GitResult {
  stdout: string;
  stderr: string;
}

/** Why a git command failed, as far as its message tells. */
export type GitFailure = 'auth' | 'unreachable' | 'not-found' | 'timeout' | 'other';

export class GitError extends RuntimeError {
  override name = 'GitError';
  constructor(
    message: string,
    /** `git <args>` with credentials removed. */
    readonly command: string,
    /** null when git did not exit on its own (timeout, abort, not installed). */
    readonly gitExitCode: number | null,
    /** Cleaned stderr: redacted, hints dropped, trimmed. */
    readonly stderr: string,
    readonly failure: GitFailure = 'other',
    readonly stdout: string = '',
  ) {
    super(message);
  }
}

const DEFAULT_TIMEOUT_MS = 120_000;
const MAX_BUFFER = 512 * 1024 * 1024;

/**
 * Inherited variables that would redirect git to another repository, config or prompt.
 * Running pawl from inside a git hook (where GIT_DIR is set) must not touch that repository.
 */
const DROPPED_ENV =
  /^(GIT_(DIR|WORK_TREE|INDEX_FILE|OBJECT_DIRECTORY|ALTERNATE_OBJECT_DIRECTORIES|COMMON_DIR|NAMESPACE|PREFIX|CEILING_DIRECTORIES|DISCOVERY_ACROSS_FILESYSTEM|CONFIG|CONFIG_PARAMETERS|CONFIG_COUNT|CONFIG_KEY_\d+|CONFIG_VALUE_\d+|ASKPASS|EDITOR|SEQUENCE_EDITOR|PAGER|EXTERNAL_DIFF|SSH|SSH_COMMAND|SSH_VARIANT|TRACE\w*|AUTHOR_\w+|COMMITTER_\w+|QUARANTINE_PATH)|SSH_ASKPASS|SSH_ASKPASS_REQUIRE|GNUPGHOME)$/;

/** The environment every pawl git invocation starts from. */
export function baseEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || DROPPED_ENV.test(k)) continue;
    env[k] = v;
  }
  env.GIT_TERMINAL_PROMPT = '0';
  env.LC_ALL = 'C';
  env.LANGUAGE = 'C';
  env.GIT_CONFIG_NOSYSTEM = '1';
  env.GIT_CONFIG_GLOBAL = '/dev/null';
  env.GIT_PAGER = 'cat';
  env.GIT_EDITOR = 'true';
  // Without credentials from a Secret, ssh must fail rather than wait for a passphrase or a host-key answer.
  env.GIT_SSH_COMMAND = 'ssh -o BatchMode=yes';
  return env;
}

/** git's messages mask with `***`, as git itself prints `https://***@host`. */
export const GIT_MASK = '***';

/** Credentials removed from git's output, commands and URLs (src/util/redact.ts, git's mask). */
export function redact(text: string, secrets: readonly string[] = []): string {
  return redactText(text, { secrets, mask: GIT_MASK });
}

/** Drop git's advice lines and progress noise; keep what tells the user what happened. */
export function cleanStderr(stderr: string, secrets: readonly string[] = []): string {
  return redact(stderr, secrets)
    .split(/\r?\n|\r/)
    .map((l) => l.replace(/\s+$/, ''))
    .filter((l) => l.length > 0 && !l.startsWith('hint:'))
    .filter(
      (l) =>
        !/^(remote: )?(Counting|Compressing|Enumerating|Writing|Receiving|Resolving|Total|Delta|Unpacking) /.test(
          l,
        ),
    )
    .join('\n');
}

/** Classify a failure from git's message so callers can tell the user what to fix. */
export function classifyFailure(stderr: string): GitFailure {
  const s = stderr.toLowerCase();
  if (
    /authentication failed|could not read (username|password)|invalid username or password|permission denied \(publickey|http basic: access denied|the requested url returned error: 40[13]|terminal prompts disabled|host key verification failed|incorrect username or password/.test(
      s,
    )
  )
    return 'auth';
  if (
    /could not resolve host|failed to connect|connection refused|couldn't connect|connection timed out|network is unreachable|no route to host|could not read from remote repository|operation timed out|empty reply from server|connection reset|ssl_connect|unable to access/.test(
      s,
    )
  )
    return 'unreachable';
  if (
    /repository .* not found|does not appear to be a git repository|the requested url returned error: 404|couldn't find remote ref/.test(
      s,
    )
  )
    return 'not-found';
  return 'other';
}

function describe(failure: GitFailure, stderr: string, timeoutMs: number): string {
  switch (failure) {
    case 'auth':
      return /host key verification failed/i.test(stderr)
        ? 'the SSH host key did not match known_hosts (host key verification failed)'
        : 'authentication failed: check the credentials in the GitRepository secretRef';
    case 'unreachable':
      return 'the git server is unreachable';
    case 'not-found':
      return 'not found on the git server';
    case 'timeout':
      return `timed out after ${Math.round(timeoutMs / 1000)}s`;
    default:
      return 'failed';
  }
}

/** `git …` with credentials removed, for messages. */
export function formatCommand(args: readonly string[], secrets: readonly string[] = []): string {
  return redact(['git', ...args].join(' '), secrets);
}

/**
 * Run git. It runs in its own process group so that a timeout or an abort also stops the
 * helpers git starts (git-remote-http, ssh), which would otherwise linger as orphans.
 */
export async function git(args: string[], opts: GitOptions): Promise<GitResult> {
  const r = await run(args, opts);
  return { stdout: r.stdout.toString('utf8'), stderr: r.stderr };
}

/** `git()` with standard output as bytes (`cat-file --batch` sizes are bytes, and blobs may be binary). */
export function gitBuffer(args: string[], opts: GitOptions): Promise<{ stdout: Buffer; stderr: string }> {
  return run(args, opts);
}

/**
 * `git()` with standard output handed over as it arrives (UTF-8, never split inside a character).
 * `onStdout` returns true when it has read enough: git is stopped then, and that is no failure.
 */
export async function gitStream(
  args: string[],
  opts: GitOptions & { onStdout: (text: string) => boolean },
): Promise<{ stderr: string }> {
  const decoder = new StringDecoder('utf8');
  let done = false;
  const r = await run(args, opts, (chunk) => {
    if (!done) done = opts.onStdout(decoder.write(chunk));
    return done;
  });
  const tail = decoder.end();
  if (!done && tail) opts.onStdout(tail);
  return { stderr: r.stderr };
}

/** `onStdout`: standard output as it arrives instead of collected; true stops git (no failure). */
async function run(
  args: string[],
  opts: GitOptions,
  onStdout?: (chunk: Buffer) => boolean,
): Promise<{ stdout: Buffer; stderr: string }> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const secrets = opts.secrets ?? [];
  const command = (): string => formatCommand(args, secrets);
  if (opts.signal?.aborted) throw new GitError(`${command()}: aborted`, command(), null, '', 'other');
  const r = await spawnProcess('git', args, {
    cwd: opts.cwd,
    env: { ...baseEnv(), ...(opts.env ?? {}) },
    timeoutMs,
    maxBytes: MAX_BUFFER,
    input: opts.input ?? '',
    ...(opts.signal ? { signal: opts.signal } : {}),
    ...(onStdout ? { onStdout } : {}),
  });
  if (!r.started) {
    if (r.error.code === 'ENOENT')
      throw new GitError(
        'git is not installed (the `git` command was not found on PATH)',
        command(),
        null,
        '',
        'other',
      );
    throw new GitError(`${command()}: ${r.error.message}`, command(), null, '', 'other');
  }
  const stderr = r.stderr.toString('utf8');
  if (r.stopped === 'enough' || (!r.stopped && r.code === 0)) return { stdout: r.stdout, stderr };
  const cleaned = cleanStderr(stderr, secrets);
  const detail = cleaned ? `\n${cleaned}` : '';
  let failure: GitFailure;
  let what: string;
  if (r.stopped === 'timeout') {
    failure = 'timeout';
    what = describe('timeout', cleaned, timeoutMs);
  } else if (r.stopped === 'abort') {
    failure = 'other';
    what = 'aborted';
  } else if (r.stopped === 'overflow') {
    failure = 'other';
    what = `output larger than ${MAX_BUFFER / 1024 / 1024} MB`;
  } else {
    failure = classifyFailure(cleaned);
    what = describe(failure, cleaned, timeoutMs);
  }
  throw new GitError(
    `${command()}: ${what}${detail}`,
    command(),
    r.stopped ? null : r.code,
    cleaned,
    failure,
    redact(r.stdout.toString('utf8'), secrets),
  );
}
