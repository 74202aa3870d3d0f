/**
 * Running a helper program other than git (git has its own runner, src/git/exec.ts, with the
 * same shape): its own process group, so that a timeout stops it and whatever it started; a
 * bound on its output; and a failure that says what happened in words, never a stack.
 */
import { spawn } from 'node:child_process';

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

const running = new Set<number>();
let exitHookInstalled = false;

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

/** Runs `command args…` and resolves with what happened; it never rejects. */
export function runProcess(
  command: string,
  args: string[],
  opts: ProcessOptions = {},
): Promise<ProcessResult> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const maxBytes = opts.maxBytes ?? 64 * 1024 * 1024;
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', () => {
      for (const pid of running) killGroup(pid, 'SIGTERM');
    });
  }
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      ...(opts.cwd ? { cwd: opts.cwd } : {}),
      env: opts.env ?? process.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      windowsHide: true,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let size = 0;
    let ended: 'timeout' | 'overflow' | null = null;
    const pid = child.pid;
    if (pid !== undefined) running.add(pid);
    const stop = (why: 'timeout' | 'overflow'): void => {
      if (ended || pid === undefined) return;
      ended = why;
      killGroup(pid, 'SIGTERM');
      setTimeout(() => killGroup(pid, 'SIGKILL'), 2000).unref();
    };
    const timer = setTimeout(() => stop('timeout'), timeoutMs);
    const collect = (into: Buffer[]) => (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) stop('overflow');
      else into.push(chunk);
    };
    child.stdout.on('data', collect(out));
    child.stderr.on('data', collect(err));
    child.once('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      if (pid !== undefined) running.delete(pid);
      const missing = e.code === 'ENOENT';
      resolve({
        ok: false,
        failure: missing ? 'missing' : 'spawn',
        exitCode: null,
        stdout: '',
        stderr: '',
        message: missing ? `${command} is not installed (not found on PATH)` : `${command}: ${e.message}`,
      });
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      if (pid !== undefined) running.delete(pid);
      const stdout = Buffer.concat(out).toString('utf8');
      const stderr = Buffer.concat(err).toString('utf8');
      if (!ended && code === 0) {
        resolve({ ok: true, stdout, stderr });
        return;
      }
      const failure = ended ?? 'exit';
      const message =
        failure === 'timeout'
          ? `timed out after ${Math.round(timeoutMs / 1000)}s`
          : failure === 'overflow'
            ? `printed more than ${Math.round(maxBytes / 1024 / 1024)} MB`
            : `exited with ${code === null ? 'a signal' : `code ${code}`}`;
      resolve({ ok: false, failure, exitCode: ended ? null : code, stdout, stderr, message });
    });
  });
}
