import { readdir, realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { UsageError } from '../util/index.js';

const CONFIG_FILE = /\.(ya?ml|json)$/i;

/**
 * The files named by `-c` paths: files as given, directories searched recursively for
 * `*.yaml`, `*.yml`, `*.json`, skipping dot-directories, node_modules and Helm charts'
 * `templates/`. Sorted, so that problems come out in a stable order; each file once, even
 * when reached twice (through two `-c` paths or a symlink).
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
  const add = (file: string, real: string): void => {
    if (seen.has(real)) return;
    seen.add(real);
    out.push(file);
  };
  // `real` is the directory's canonical path: a plain subdirectory's is its parent's plus its
  // name, so only symlinks cost a realpath call.
  const walk = async (dir: string, real: string): Promise<void> => {
    // Symlinked directories may loop back on themselves.
    if (visitedDirs.has(real)) return;
    visitedDirs.add(real);
    const entries = await readdir(dir, { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    // A Helm chart's templates are Go templates, not manifests.
    const isChart = entries.some((e) => e.name === 'Chart.yaml' && !e.isDirectory());
    for (const e of entries) {
      if (isChart && e.name === 'templates') continue;
      const full = join(dir, e.name);
      let isDir = e.isDirectory();
      let isFile = e.isFile();
      let realFull = join(real, e.name);
      if (e.isSymbolicLink()) {
        const st = await stat(full).catch(() => undefined);
        if (!st) continue;
        isDir = st.isDirectory();
        isFile = st.isFile();
        realFull = await realpath(full);
      }
      if (isDir) {
        if (e.name.startsWith('.') || e.name === 'node_modules') continue;
        await walk(full, realFull);
      } else if (isFile && CONFIG_FILE.test(e.name)) {
        add(full, realFull);
      }
    }
  };
  for (const p of paths) {
    const st = await stat(p).catch(() => undefined);
    if (!st) throw new UsageError(`-c ${p}: no such file or directory`);
    const real = await realpath(p);
    if (st.isDirectory()) await walk(p, real);
    else add(p, real);
  }
  return out;
}
