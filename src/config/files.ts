import { readdir, realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { UsageError } from '../util/errors.js';

const CONFIG_FILE = /\.(ya?ml|json)$/i;

/**
 * The files named by `-c` paths: files as given, directories searched recursively for
 * `*.yaml`, `*.yml`, `*.json`, skipping dot-directories and node_modules. Sorted, so that
 * problems come out in a stable order; each file once, even when reached twice.
 */
export async function configFiles(paths: string[]): Promise<string[]> {
  if (paths.length === 0) {
    throw new UsageError(
      'no configuration given: pass -c PATH (a file or directory of Flux/pawl YAML objects)',
    );
  }
  const out: string[] = [];
  const seen = new Set<string>();
  const visitedDirs = new Set<string>();
  const add = async (file: string): Promise<void> => {
    const real = await realpath(file);
    if (seen.has(real)) return;
    seen.add(real);
    out.push(file);
  };
  const walk = async (dir: string): Promise<void> => {
    const real = await realpath(dir);
    // Symlinked directories may loop back on themselves.
    if (visitedDirs.has(real)) return;
    visitedDirs.add(real);
    const entries = await readdir(dir, { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      const full = join(dir, e.name);
      let isDir = e.isDirectory();
      let isFile = e.isFile();
      if (e.isSymbolicLink()) {
        const st = await stat(full).catch(() => undefined);
        if (!st) continue;
        isDir = st.isDirectory();
        isFile = st.isFile();
      }
      if (isDir) {
        if (e.name.startsWith('.') || e.name === 'node_modules') continue;
        await walk(full);
      } else if (isFile && CONFIG_FILE.test(e.name)) {
        await add(full);
      }
    }
  };
  for (const p of paths) {
    const st = await stat(p).catch(() => undefined);
    if (!st) throw new UsageError(`-c ${p}: no such file or directory`);
    if (st.isDirectory()) await walk(p);
    else await add(p);
  }
  return out;
}
