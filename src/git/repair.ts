/**
 * What a killed pawl or git leaves in the state directory: credential temp dirs, half-clones and
 * lock files; and the check that says whether a workspace is whole.
 */
import { readFile, readdir, rm, stat, unlink } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { processAlive } from '../util/index.js';
import { tempRoot } from './auth.js';
import { git } from './exec.js';

export async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

/** Remove credential temp dirs and half-clones left by pawl processes that no longer run. */
export async function sweepLeftovers(stateDir: string, wsDir: string): Promise<void> {
  const stale = async (dir: string, pattern: RegExp): Promise<void> => {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      return;
    }
    for (const n of names) {
      const m = pattern.exec(n);
      if (m && !processAlive(Number(m[1]))) await rm(join(dir, n), { recursive: true, force: true });
    }
  };
  await stale(tempRoot(stateDir), /^(\d+)-/);
  const base = wsDir.slice(dirname(wsDir).length + 1);
  await stale(
    dirname(wsDir),
    new RegExp(`^\\.${base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.clone-(\\d+)-`),
  );
}

/** Lock files a killed git leaves behind; pawl is the only writer of its workspaces. */
async function removeStaleLocks(gitDir: string): Promise<void> {
  for (const f of [
    'index.lock',
    'HEAD.lock',
    'config.lock',
    'packed-refs.lock',
    'shallow.lock',
    'ORIG_HEAD.lock',
    'FETCH_HEAD.lock',
  ]) {
    await unlink(join(gitDir, f)).catch(() => undefined);
  }
  const walk = async (dir: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = join(dir, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.name.endsWith('.lock')) await unlink(p).catch(() => undefined);
    }
  };
  await walk(join(gitDir, 'refs'));
  for (const d of ['rebase-merge', 'rebase-apply'])
    await rm(join(gitDir, d), { recursive: true, force: true });
  for (const f of ['MERGE_HEAD', 'CHERRY_PICK_HEAD', 'REVERT_HEAD', 'BISECT_LOG'])
    await unlink(join(gitDir, f)).catch(() => undefined);
}

/**
 * Is `dir` a complete pawl workspace for `url`? Leftover locks are removed on the way. Run every
 * pass, so usually without a git process: the repository is whole (git's own test: a valid HEAD,
 * `objects/` and `refs/`) and its config names origin's URL in the plain form pawl's clone wrote.
 * Anything else in the config (includes, quoting, escapes, a second URL) is left to git: with an
 * explicit `--git-dir` it reads that directory's config only if it is a whole repository, and
 * never one found above `dir`.
 */
export async function healthy(dir: string, url: string): Promise<boolean> {
  const gitDir = join(dir, '.git');
  if (!(await exists(join(gitDir, 'HEAD')))) return false;
  try {
    let origin = await plainOriginUrl(gitDir);
    if (origin === null) return false;
    origin ??= (
      await git([`--git-dir=${resolve(gitDir)}`, 'config', '--get', 'remote.origin.url'], { cwd: dir })
    ).stdout.trim();
    if (origin !== url) return false;
    await removeStaleLocks(gitDir);
    return true;
  } catch {
    return false;
  }
}

const SECTION = /^\[([A-Za-z0-9.-]+)(?:[ \t]+"([^"\\]*)")?\][ \t]*$/;
const ENTRY = /^([A-Za-z][A-Za-z0-9-]*)[ \t]*(?:=[ \t]*([^"\\;#]*?))?[ \t]*$/;

/**
 * origin's URL from a plain config file: null when the directory is not a whole repository,
 * undefined when the file is not plain enough to read here (git decides then).
 */
async function plainOriginUrl(gitDir: string): Promise<string | null | undefined> {
  const [head, objects, refs] = await Promise.all([
    readFile(join(gitDir, 'HEAD'), 'utf8').catch(() => null),
    stat(join(gitDir, 'objects')).catch(() => null),
    stat(join(gitDir, 'refs')).catch(() => null),
  ]);
  if (head === null || !objects?.isDirectory() || !refs?.isDirectory()) return null;
  if (!/^(ref: refs\/\S+|[0-9a-f]{40}|[0-9a-f]{64})\n?$/.test(head)) return undefined;
  if (await exists(join(gitDir, 'commondir'))) return undefined;
  const config = await readFile(join(gitDir, 'config'), 'utf8').catch(() => null);
  if (config === null) return undefined;
  let section = '';
  const urls: string[] = [];
  for (const raw of config.split('\n')) {
    const line = raw.replace(/\r$/, '').trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const s = SECTION.exec(line);
    if (s) {
      const name = s[1]!.toLowerCase();
      if (name === 'include' || name === 'includeif') return undefined;
      section = s[2] === undefined ? name : `${name}\0${s[2]}`;
      continue;
    }
    const e = ENTRY.exec(line);
    // An entry before any section is an error to git: it decides.
    if (!e || section === '') return undefined;
    if (section === 'remote\0origin' && e[1]!.toLowerCase() === 'url') {
      if (e[2] === undefined) return undefined;
      urls.push(e[2]);
    }
  }
  return urls.length === 1 ? urls[0] : undefined;
}
