/**
 * Directories with a kustomization file are read the way Flux applies them: built with real
 * kustomize (`kubectl kustomize DIR`). What the build reads — bases, resources, patches,
 * generator inputs — is not read again on its own, so a base is not defined twice and a patch
 * (a partial object) is not taken for an object. Built objects are mapped back to the file
 * (and line) they came from where that can be told.
 */
import { stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { parse } from 'yaml';
import { runProcess, type ProcessResult } from '../util/index.js';
import { KUSTOMIZATION_FILES } from './files.js';
import { valueAt } from './issues.js';
import { DEFAULT_LIMITS, readBounded } from './limits.js';
import type { SourceDoc } from './yaml-source.js';

/** Runs kustomize on a directory. Injected so that tests and embedders can replace it. */
export type KustomizeBuild = (dir: string) => Promise<ProcessResult>;

/**
 * `kubectl kustomize DIR` (kubectl from `PAWL_KUBECTL`, else PATH), 60 s at most; output beyond
 * `maxBytes` stops it (the failure `overflow`).
 */
export function kubectlKustomize(
  env: Record<string, string | undefined> = process.env,
  maxBytes = DEFAULT_LIMITS.buildBytes,
): KustomizeBuild {
  const kubectl = env.PAWL_KUBECTL || 'kubectl';
  // stderr shares the bound: room for kustomize's words on top of a full build.
  return (dir) =>
    runProcess(kubectl, ['kustomize', dir], { env, timeoutMs: 60_000, maxBytes: maxBytes + 65_536 });
}

/** The kustomization file of `dir`, or undefined when it has none. */
export async function kustomizationFile(dir: string): Promise<string | undefined> {
  for (const name of KUSTOMIZATION_FILES) {
    const st = await stat(join(dir, name)).catch(() => undefined);
    if (st?.isFile()) return join(dir, name);
  }
  return undefined;
}

/** What a kustomization reads, resolved against its directory; remote resources are left out. */
export interface KustomizationRefs {
  /** Directories and files of `resources`, `bases`, `components`, `crds`. */
  resources: string[];
  /** Files of `patches[].path`, `patchesStrategicMerge`, `patchesJson6902[].path`. */
  patches: string[];
  /** Files read by generators and replacements: consumed, never objects of their own. */
  other: string[];
}

const REMOTE = /^(?:[a-z][a-z0-9+.-]*:\/\/|git@|github\.com\/|gitlab\.com\/|bitbucket\.org\/)|\?ref=/i;

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/** Reads a kustomization file's references. A file that does not parse names nothing. */
export function kustomizationRefs(dir: string, text: string): KustomizationRefs {
  let k: unknown;
  try {
    k = parse(text, { logLevel: 'error' });
  } catch {
    return { resources: [], patches: [], other: [] };
  }
  const local = (p: string): string | undefined => (REMOTE.test(p) ? undefined : resolve(dir, p));
  const pick = (list: string[]): string[] => list.map(local).filter((p): p is string => p !== undefined);
  const paths = (field: string): string[] => {
    const v = valueAt(k, [field]);
    return Array.isArray(v) ? strings(v.map((x) => valueAt(x, ['path']))) : [];
  };
  const resources = pick([
    ...strings(valueAt(k, ['resources'])),
    ...strings(valueAt(k, ['bases'])),
    ...strings(valueAt(k, ['components'])),
    ...strings(valueAt(k, ['crds'])),
  ]);
  // An inline strategic-merge patch is YAML text, not a path.
  const smp = strings(valueAt(k, ['patchesStrategicMerge'])).filter((p) => !/[\n:{]/.test(p));
  const patches = pick([...paths('patches'), ...paths('patchesJson6902'), ...smp]);
  const generated: string[] = [];
  for (const field of ['configMapGenerator', 'secretGenerator']) {
    const gens = valueAt(k, [field]);
    if (!Array.isArray(gens)) continue;
    for (const g of gens) {
      for (const f of strings(valueAt(g, ['files'])))
        generated.push(f.includes('=') ? f.slice(f.indexOf('=') + 1) : f);
      generated.push(...strings(valueAt(g, ['envs'])));
      const env = valueAt(g, ['env']);
      if (typeof env === 'string') generated.push(env);
    }
  }
  return { resources, patches, other: pick([...generated, ...paths('replacements')]) };
}

/** The files a kustomization reads, through its bases, split into objects and patches. */
export interface UnitSources {
  resources: string[];
  patches: string[];
  /** Every directory and file the build reads (for "not read again on its own"). */
  consumed: string[];
}

export async function unitSources(
  dir: string,
  maxFileBytes = DEFAULT_LIMITS.fileBytes,
): Promise<UnitSources> {
  const out: UnitSources = { resources: [], patches: [], consumed: [] };
  const visited = new Set<string>();
  const visit = async (d: string): Promise<void> => {
    if (visited.has(d)) return;
    visited.add(d);
    const file = await kustomizationFile(d);
    if (!file) return;
    // An oversized kustomization names nothing here; the build reports it.
    const read = await readBounded(file, maxFileBytes).catch(() => undefined);
    const text = read && 'text' in read ? read.text : '';
    const refs = kustomizationRefs(d, text);
    for (const r of refs.resources) {
      out.consumed.push(r);
      const st = await stat(r).catch(() => undefined);
      if (st?.isDirectory()) await visit(r);
      else if (st?.isFile()) out.resources.push(r);
    }
    out.patches.push(...refs.patches);
    out.consumed.push(...refs.patches, ...refs.other);
  };
  await visit(dir);
  return out;
}

/** Kind and name of an object as written in a source file. */
function identity(v: unknown): { kind: string; name: string } | undefined {
  const kind = valueAt(v, ['kind']);
  const name = valueAt(v, ['metadata', 'name']);
  return typeof kind === 'string' && typeof name === 'string' ? { kind, name } : undefined;
}

/**
 * Where a built object came from. The object's own file is the resource document of the same
 * kind whose name is the built name, or is contained in it (kustomize adds prefixes and
 * suffixes); a field's line is taken from the last patch that sets that field, else from the
 * object's own file (or the nearest field above it there). Without a match, the kustomization
 * file is named without a line.
 */
export function mapBuiltDocument(
  built: SourceDoc,
  kustomization: string,
  resources: readonly SourceDoc[],
  patches: readonly SourceDoc[],
): SourceDoc {
  const id = identity(built.value);
  const via = dirname(kustomization);
  const unmapped: SourceDoc = { file: kustomization, line: 0, value: built.value, lineOf: () => 0, via };
  if (!id) return unmapped;
  const sameKind = resources.filter((d) => identity(d.value)?.kind === id.kind);
  const source =
    sameKind.find((d) => identity(d.value)!.name === id.name) ??
    sameKind
      .filter((d) => id.name.includes(identity(d.value)!.name))
      .sort((a, b) => identity(b.value)!.name.length - identity(a.value)!.name.length)[0];
  if (!source) return unmapped;
  const sourceName = identity(source.value)!.name;
  const myPatches = patches
    .filter((p) => {
      const pid = identity(p.value);
      return pid?.kind === id.kind && (pid.name === sourceName || pid.name === id.name);
    })
    .reverse();
  // A patch names its target (apiVersion, kind, metadata.name): those lines stay the object's own.
  const identifying = (path: readonly PropertyKey[]): boolean =>
    path.length === 0 ||
    path[0] === 'apiVersion' ||
    path[0] === 'kind' ||
    (path[0] === 'metadata' && (path[1] === undefined || path[1] === 'name' || path[1] === 'namespace'));
  const patchFor = (path: readonly PropertyKey[]): SourceDoc | undefined =>
    identifying(path) ? undefined : myPatches.find((p) => valueAt(p.value, path) !== undefined);
  return {
    file: source.file,
    line: source.line,
    value: built.value,
    lineOf: (path) => (patchFor(path) ?? source).lineOf(path),
    fileOf: (path) => (patchFor(path) ?? source).file,
    via,
  };
}
