import { readdir, realpath, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { UsageError } from '../util/index.js';

const CONFIG_FILE = /\.(ya?ml|json)$/i;

/** The names kustomize reads a directory's kustomization from, in its order. */
export const KUSTOMIZATION_FILES = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'] as const;

/** What a walk of `-c` paths found. */
export interface ConfigInputs {
  /** Plain files, read as they are. */
  files: string[];
  /** Directories with a kustomization file: built with kustomize, not descended into. */
  kustomizations: string[];
  /** Canonical path of every file and directory above, for de-duplication and containment. */
  real: Map<string, string>;
  /** For each file and directory above, the canonical path of the `-c` path it was found under. */
  top: Map<string, string>;
}

export interface WalkState {
  seenFiles: Set<string>;
  visitedDirs: Set<string>;
}

export const newWalkState = (): WalkState => ({ seenFiles: new Set(), visitedDirs: new Set() });

/**
 * The files named by `-c` paths: files as given, directories searched recursively for
 * `*.yaml`, `*.yml`, `*.json`, skipping dot-directories, node_modules and Helm charts'
 * `templates/`. A directory holding a kustomization file is returned as a kustomization (read
 * the way Flux applies it) and not searched further. Sorted, so that problems come out in a
 * stable order; each file once, even when reached twice (through two `-c` paths, a symlink, or
 * an earlier walk with the same `state`).
 */
export async function walkConfigPaths(
  paths: string[],
  state: WalkState = newWalkState(),
): Promise<ConfigInputs> {
  if (paths.length === 0) {
    throw new UsageError(
      'no configuration given: pass -c PATH (a file or directory of Flux/pawl YAML objects) or set PAWL_CONFIG',
    );
  }
  const out: ConfigInputs = { files: [], kustomizations: [], real: new Map(), top: new Map() };
  const add = (file: string, real: string, top: string): void => {
    if (state.seenFiles.has(real)) return;
    state.seenFiles.add(real);
    out.files.push(file);
    out.real.set(file, real);
    out.top.set(file, top);
  };
  // `real` is the directory's canonical path: a plain subdirectory's is its parent's plus its
  // name, so only symlinks cost a realpath call.
  const walk = async (dir: string, real: string, top: string): Promise<void> => {
    // Symlinked directories may loop back on themselves.
    if (state.visitedDirs.has(real)) return;
    state.visitedDirs.add(real);
    const entries = await readdir(dir, { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    if (
      entries.some((e) => !e.isDirectory() && (KUSTOMIZATION_FILES as readonly string[]).includes(e.name))
    ) {
      out.kustomizations.push(dir);
      out.real.set(dir, real);
      out.top.set(dir, top);
      return;
    }
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
        await walk(full, realFull, top);
      } else if (isFile && CONFIG_FILE.test(e.name)) {
        add(full, realFull, top);
      }
    }
  };
  for (const p of paths) {
    const st = await stat(p).catch(() => undefined);
    if (!st) throw new UsageError(`-c ${p}: no such file or directory`);
    const real = await realpath(p);
    if (st.isDirectory()) await walk(p, real, real);
    else add(p, real, dirname(real));
  }
  return out;
}
