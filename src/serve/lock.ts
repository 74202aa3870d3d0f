/**
 * One `pawl serve` per SQLite state directory. Two daemons on one pawl.db would each run every
 * job (SQLite cannot share leases between processes the way PostgreSQL does), so the second is
 * refused and told what to do instead. Only `pawl serve` takes this lock: `pawl explain`,
 * `pawl tags` and the other readers open the database as before while the daemon runs.
 *
 * The lock is a file beside pawl.db naming its holder (pid, host, start). It is stale — and
 * taken over — when its process is gone: on this host, when that pid no longer runs (or is this
 * process: a container restarted with the same pid); on any host, when the holder stopped
 * touching it (a container on another node, a volume moved), after STALE_MS.
 */
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { mkdir, readFile, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { errorMessage, processAlive, RuntimeError, type Logger } from '../util/index.js';

/** The lock beside a SQLite file: `pawl.db` → `pawl.db.serve-lock`. */
export const LOCK_SUFFIX = '.serve-lock';
const TOUCH_MS = 10_000;
const STALE_MS = 60_000;

interface Holder {
  pid: number;
  host: string;
  startedAt: string;
}

export interface ServeLock {
  readonly path: string;
  release(): Promise<void>;
}

async function readHolder(path: string): Promise<{ holder: Holder | null; ageMs: number } | null> {
  try {
    const [text, st] = await Promise.all([readFile(path, 'utf8'), stat(path)]);
    let holder: Holder | null = null;
    try {
      const h = JSON.parse(text) as Partial<Holder>;
      if (typeof h.pid === 'number' && typeof h.host === 'string')
        holder = { pid: h.pid, host: h.host, startedAt: String(h.startedAt ?? '') };
    } catch {
      // half-written or foreign: judged by its age alone
    }
    return { holder, ageMs: Date.now() - st.mtimeMs };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

function stale(found: { holder: Holder | null; ageMs: number }): boolean {
  const h = found.holder;
  if (h && h.host === hostname() && (h.pid === process.pid || !processAlive(h.pid))) return true;
  return found.ageMs > STALE_MS;
}

/** Takes the lock of the SQLite file `dbFile` for this `pawl serve`, or says who holds it. */
export async function acquireServeLock(dbFile: string, log: Logger): Promise<ServeLock> {
  const path = dbFile + LOCK_SUFFIX;
  const stateDir = dirname(dbFile);
  const me: Holder = { pid: process.pid, host: hostname(), startedAt: new Date().toISOString() };
  const body = JSON.stringify(me) + '\n';
  await mkdir(stateDir, { recursive: true }).catch(() => undefined);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await writeFile(path, body, { flag: 'wx' });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST')
        throw new RuntimeError(`cannot create the lock file ${path}: ${errorMessage(err)}`);
      const found = await readHolder(path);
      if (found && !stale(found)) throw refusal(dbFile, path, found.holder);
      if (found)
        log.warn({ lock: path, holder: found.holder }, 'taking over the lock of a pawl serve that is gone');
      await unlink(path).catch(() => undefined);
      continue;
    }
    // Two starting at once may both have removed a stale lock: the file says who won.
    const now = await readHolder(path);
    if (now?.holder?.pid !== me.pid || now.holder.host !== me.host || now.holder.startedAt !== me.startedAt)
      throw refusal(dbFile, path, now?.holder ?? null);
    const timer = setInterval(() => {
      const t = new Date();
      utimes(path, t, t).catch(() => undefined);
    }, TOUCH_MS);
    timer.unref();
    return {
      path,
      async release() {
        clearInterval(timer);
        const held = await readHolder(path).catch(() => null);
        if (held?.holder?.pid === me.pid && held.holder.startedAt === me.startedAt)
          await unlink(path).catch(() => undefined);
      },
    };
  }
  throw refusal(dbFile, path, (await readHolder(path))?.holder ?? null);
}

function refusal(dbFile: string, path: string, holder: Holder | null): RuntimeError {
  const who = holder ? `pid ${holder.pid} on ${holder.host}, since ${holder.startedAt}` : 'see the lock file';
  return new RuntimeError(
    `another pawl serve is using the SQLite store ${dbFile} (${who}). ` +
      `It is for one pawl serve at a time: two would both run every job. ` +
      `Stop the other one first; or, to run several replicas, give each the same PostgreSQL database: ` +
      `pawl serve --store postgres://USER@HOST/DB (docs/replicas.md). ` +
      `If that process is gone for good, delete ${path}. (pawl explain, tags and the other commands may read the state while pawl serve runs.)`,
  );
}
