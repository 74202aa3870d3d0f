/**
 * The one way pawl runs another program (git's runner, src/git/exec.ts, is built on it): in its
 * own process group, so that a timeout, an abort or pawl's own exit stops it and whatever it
 * started (git-remote-http, ssh); with a bound on its output; and, through `runProcess`, a
 * failure that says what happened in words, never a stack.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';

export interface ProcessOptions {
  cwd?: string;
  env?: Record<string, string | undefined>;
  /** Default 60 s. */
  timeoutMs?: number;
  /** stdout and stderr together; default 64 MB. */
  maxBytes?: number;
}

export type ProcessResult =
  | { ok: true; stdout: string; stderr: string }
  | {
      ok: false;
      /** `missing`: the program is not installed; `exit`: it exited non-zero; others as named. */
      failure: 'missing' | 'exit' | 'timeout' | 'overflow' | 'spawn';
      exitCode: number | null;
      stdout: string;
      stderr: string;
      /** One sentence, e.g. "timed out after 60s". */
      message: string;
    };

/** Why pawl stopped a program: its time ran out, the caller aborted, too much output, or enough read. */
export type ProcessStop = 'timeout' | 'abort' | 'overflow' | 'enough';

export interface SpawnOptions {
  cwd?: string;
  /** Default: pawl's own environment. */
  env?: Record<string, string | undefined>;
  timeoutMs: number;
  /** Collected standard output and standard error together. */
  maxBytes: number;
  /** Written to standard input, which is closed after it; without it, standard input is /dev/null. */
  input?: string | Buffer;
  signal?: AbortSignal;
  /**
   * Standard output handed over as it arrives instead of collected (and not counted in `maxBytes`);
   * returning true stops the program, and that is `enough`, no failure.
   */
  onStdout?: (chunk: Buffer) => boolean;
}

export type SpawnResult =
  /** The program could not be started (`error.code` ENOENT: it is not installed). */
  | { started: false; error: NodeJS.ErrnoException }
  /** `code` is null when it ended by a signal, as when `stopped` says why pawl stopped it. */
  | { started: true; code: number | null; stopped: ProcessStop | null; stdout: Buffer; stderr: Buffer };

/** How long a stopped program has between SIGTERM and SIGKILL, and SIGKILL and its result. */
const KILL_AFTER_MS = 2000;

/** Process groups of running programs, stopped if pawl exits while they run. */
const running = new Set<number>();
let exitHookInstalled = false;

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

/** Is a process with this id running? (EPERM: it runs, as another user.) */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Runs `command args…` in its own process group and resolves with how it ended; it never rejects.
 * A stopped program gets SIGTERM, then SIGKILL two seconds later if it is still there, and its
 * result two seconds after that even if something outside its group still holds its output open.
 */
export function spawnProcess(
  command: string,
  args: readonly string[],
  opts: SpawnOptions,
): Promise<SpawnResult> {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', () => {
      for (const pid of running) killGroup(pid, 'SIGTERM');
    });
  }
  const how = {
    ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
    env: opts.env ?? process.env,
    detached: true,
    windowsHide: true,
  };
  return new Promise((resolve) => {
    const child: ChildProcessByStdio<Writable | null, Readable, Readable> =
      opts.input === undefined
        ? spawn(command, args, { ...how, stdio: ['ignore', 'pipe', 'pipe'] })
        : spawn(command, args, { ...how, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let size = 0;
    let stopped: ProcessStop | null = null;
    const pid = child.pid;
    if (pid !== undefined) running.add(pid);
    const stop = (why: ProcessStop): void => {
      if (stopped || pid === undefined) return;
      stopped = why;
      killGroup(pid, 'SIGTERM');
      setTimeout(() => {
        killGroup(pid, 'SIGKILL');
        // A helper that left the group (setsid) can hold the output open after the group is
        // gone; its caller (a pass, a scan) is not held for it: what was read is the result.
        setTimeout(() => {
          if (settled) return;
          child.stdout.destroy();
          child.stderr.destroy();
          ended(null);
        }, KILL_AFTER_MS).unref();
      }, KILL_AFTER_MS).unref();
    };
    const timer = setTimeout(() => stop('timeout'), opts.timeoutMs);
    const onAbort = (): void => stop('abort');
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    let settled = false;
    const settle = (result: SpawnResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      if (pid !== undefined) running.delete(pid);
      resolve(result);
    };
    /** Ended (or given up on, `code` null), with what it wrote so far. */
    const ended = (code: number | null): void =>
      settle({ started: true, code, stopped, stdout: Buffer.concat(out), stderr: Buffer.concat(err) });
    const collect = (into: Buffer[]) => (chunk: Buffer) => {
      size += chunk.length;
      if (size > opts.maxBytes) stop('overflow');
      else into.push(chunk);
    };
    const { onStdout } = opts;
    if (onStdout)
      child.stdout.on('data', (chunk: Buffer) => {
        if (!stopped && onStdout(chunk)) stop('enough');
      });
    else child.stdout.on('data', collect(out));
    child.stderr.on('data', collect(err));
    if (child.stdin) {
      child.stdin.on('error', () => undefined);
      child.stdin.end(opts.input);
    }
    child.once('error', (error: NodeJS.ErrnoException) => settle({ started: false, error }));
    child.once('close', ended);
  });
}

/** Runs `command args…` and resolves with what happened, in words; it never rejects. */
export async function runProcess(
  command: string,
  args: string[],
  opts: ProcessOptions = {},
): Promise<ProcessResult> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const maxBytes = opts.maxBytes ?? 64 * 1024 * 1024;
  const r = await spawnProcess(command, args, {
    ...(opts.cwd ? { cwd: opts.cwd } : {}),
    ...(opts.env ? { env: opts.env } : {}),
    timeoutMs,
    maxBytes,
  });
  if (!r.started) {
    const missing = r.error.code === 'ENOENT';
    return {
      ok: false,
      failure: missing ? 'missing' : 'spawn',
      exitCode: null,
      stdout: '',
      stderr: '',
      message: missing ? `${command} is not installed (not found on PATH)` : `${command}: ${r.error.message}`,
    };
  }
  const stdout = r.stdout.toString('utf8');
  const stderr = r.stderr.toString('utf8');
  if (!r.stopped && r.code === 0) return { ok: true, stdout, stderr };
  // Nothing here is stopped for `abort` or `enough`: no signal, no onStdout.
  const failure = r.stopped === 'overflow' ? 'overflow' : r.stopped ? 'timeout' : 'exit';
  const message =
    failure === 'timeout'
      ? `timed out after ${Math.round(timeoutMs / 1000)}s`
      : failure === 'overflow'
        ? `printed more than ${Math.round(maxBytes / 1024 / 1024)} MB`
        : `exited with ${r.code === null ? 'a signal' : `code ${r.code}`}`;
  return { ok: false, failure, exitCode: r.stopped ? null : r.code, stdout, stderr, message };
}
