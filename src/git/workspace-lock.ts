/**
 * One pass at a time per workspace: a lock held within this process and, through a pid file,
 * against other pawl processes on the same state directory.
 */
import { mkdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { processAlive, RuntimeError } from '../util/index.js';
import { openWorkspace, workspaceDir, type OpenWorkspaceOptions, type Workspace } from './workspace.js';

const inProcess = new Map<string, Promise<unknown>>();

async function acquireFileLock(
  lockFile: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<() => Promise<void>> {
  const deadline = Date.now() + timeoutMs;
  await mkdir(dirname(lockFile), { recursive: true, mode: 0o700 });
  for (;;) {
    try {
      await writeFile(lockFile, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
      return () => unlink(lockFile).catch(() => undefined);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = Number.parseInt(await readFile(lockFile, 'utf8').catch(() => ''), 10);
    if (!Number.isFinite(holder) || !processAlive(holder)) {
      // Left by a pawl that is gone (or half-written): take it over.
      await unlink(lockFile).catch(() => undefined);
      continue;
    }
    if (signal?.aborted) throw new RuntimeError('aborted while waiting for the workspace lock');
    if (Date.now() > deadline)
      throw new RuntimeError(
        `the workspace ${dirname(lockFile)} is in use by another pawl process (pid ${holder})`,
      );
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface WithWorkspaceOptions extends OpenWorkspaceOptions {
  /** How long to wait for another pawl using the same workspace; default 10 minutes. */
  lockTimeoutMs?: number;
}

/**
 * Open the workspace and run `fn` with it, holding a lock so that no other pass in this
 * process or another pawl process on the same state directory uses it meanwhile.
 */
export async function withWorkspace<T>(
  opts: WithWorkspaceOptions,
  fn: (ws: Workspace) => Promise<T>,
): Promise<T> {
  const dir = workspaceDir(opts.stateDir, opts.repo);
  const previous = inProcess.get(dir) ?? Promise.resolve();
  let done!: () => void;
  const mine = new Promise<void>((r) => (done = r));
  const chained = previous.then(() => mine);
  inProcess.set(dir, chained);
  try {
    await previous.catch(() => undefined);
    const release = await acquireFileLock(`${dir}.lock`, opts.lockTimeoutMs ?? 600_000, opts.signal);
    try {
      return await fn(await openWorkspace(opts));
    } finally {
      await release();
    }
  } finally {
    done();
    if (inProcess.get(dir) === chained) inProcess.delete(dir);
  }
}
