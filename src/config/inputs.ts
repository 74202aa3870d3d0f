/**
 * The texts pawl reads objects from, found the way Flux applies a repository:
 *
 * - plain YAML/JSON files under the `-c` paths, as they are;
 * - each directory with a kustomization file, built with kustomize, unless another
 *   kustomization reads it (then it is part of that build: a base, a component);
 * - files a kustomization reads (resources, patches, generator inputs) only through its build;
 * - the `spec.path` of every Flux `Kustomization` found (relative to the root of the Git work
 *   tree it was found in), read too when it lies outside the `-c` paths, so that
 *   `-c clusters/production` reads what Flux applies for that cluster;
 * - Flux `postBuild.substitute` values applied to what lies under that Kustomization's path.
 */
import { readFile, readdir, realpath, stat } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { redactUrl, type Problem } from '../util/index.js';
import { newWalkState, walkConfigPaths } from './files.js';
import { valueAt } from './issues.js';
import { kustomizationFile, mapBuiltDocument, unitSources, type KustomizeBuild } from './kustomize.js';
import {
  cutOversizedDocuments,
  documentSegments,
  limitWords,
  readBounded,
  sizeWords,
  type OversizedDocument,
  type SizeLimits,
} from './limits.js';
import { substituteDocuments } from './substitute.js';
import { parseDocuments, type SourceDoc } from './yaml-source.js';

export interface InputText {
  /** The file named in messages: the file itself, or a kustomization's kustomization file. */
  file: string;
  text: string;
  /** For a kustomize build: where each built document came from. */
  mapDoc?: (doc: SourceDoc) => SourceDoc;
  /** Documents cut out of `text` for their size (their lines are blank in it). */
  oversized: OversizedDocument[];
}

interface Input {
  kind: 'file' | 'kustomization';
  path: string;
  real: string;
  top: string;
  /** The kustomization file (for a kustomization). */
  kfile?: string;
  resources?: string[];
  patches?: string[];
  /** Read or built text; undefined when that failed (a problem says why). */
  text?: string;
  /** Documents cut out of `text` for their size. */
  oversized?: OversizedDocument[];
}

/** A Flux Kustomization, as far as reading a repository needs it. */
interface FluxKustomization {
  name: string;
  file: string;
  /** Canonical path of the directory it applies. */
  target: string;
  substitute: Record<string, string>;
  substituteFrom: boolean;
}

const FLUX_KUSTOMIZE_GROUP = 'kustomize.toolkit.fluxcd.io/';

/** Keeps a text read or built, with its oversized documents cut out before anything parses it. */
function keep(input: Input, text: string, limits: SizeLimits): void {
  const cut = cutOversizedDocuments(text, limits.documentBytes);
  input.text = cut.text;
  input.oversized = cut.oversized;
}

/** Runs `fn` over `items`, at most `limit` at a time. */
async function each<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

const inside = (dir: string, path: string): boolean => {
  const rel = relative(dir, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
};

// Newer kubectl logs its error the klog way: `E1130 10:35:13.149891 10731 run.go:72] "command failed" err="…"`.
const KLOG = /^[EWIF]\d{4} [\d:.]+\s+\d+ \S+\] "command failed" err="(.*)"$/;

/** kustomize's own words, without its deprecation notes, usage text and log decoration. */
export function kustomizeWords(stderr: string): string {
  const lines = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('# Warning') && !l.startsWith('Warning:'))
    .map((l) => {
      const m = KLOG.exec(l);
      return m ? m[1]!.replace(/\\"/g, '"').replace(/\\\\/g, '\\') : l;
    });
  return lines.join('; ').replace(/^Error:\s*/, '');
}

async function gitRoot(start: string, cache: Map<string, string | null>): Promise<string | null> {
  const hit = cache.get(start);
  if (hit !== undefined) return hit;
  const found = await stat(join(start, '.git')).then(
    () => true,
    () => false,
  );
  const parent = dirname(start);
  const root = found ? start : parent === start ? null : await gitRoot(parent, cache);
  cache.set(start, root);
  return root;
}

const FLUX_SOURCE_GROUP = 'source.toolkit.fluxcd.io/';

/** The documents of `text` of a kind in an API group, with where each is written. */
function fluxObjects(text: string, file: string, kind: string, groupPrefix: string): SourceDoc[] {
  // A top-level `kind:`: not the CRDs of gotk-components.yaml, which only name it.
  const top = new RegExp(`^kind:\\s*["']?${kind}\\b`, 'm');
  if (!text.includes(groupPrefix) || !top.test(text)) return [];
  // Only the documents that may be one: the CRDs and the rest of a build are never parsed. Each
  // is parsed after as many line breaks as precede it, so that its lines are the file's.
  return documentSegments(text)
    .filter((seg) => seg.text.includes(groupPrefix) && top.test(seg.text))
    .flatMap((seg) => parseDocuments(file, '\n'.repeat(seg.line - 1) + seg.text).docs)
    .filter((d) => {
      const apiVersion = valueAt(d.value, ['apiVersion']);
      return (
        valueAt(d.value, ['kind']) === kind &&
        typeof apiVersion === 'string' &&
        apiVersion.startsWith(groupPrefix)
      );
    });
}

/** A Git URL as a comparable `host/path`: scheme, user, `.git` and a trailing slash dropped. */
export function gitUrlKey(url: string): string {
  let u = url.trim();
  const scp = /^(?:[^@/:]+@)?([^:/]+):(?!\/)(.*)$/.exec(u);
  if (scp && !/^[a-z][a-z0-9+.-]*:\/\//i.test(u)) u = `${scp[1]}/${scp[2]}`;
  else u = u.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '').replace(/^[^@/]*@/, '');
  u = u.replace(/\/+$/, '').replace(/\.git$/i, '');
  const slash = u.indexOf('/');
  return slash < 0
    ? u.toLowerCase()
    : u
        .slice(0, slash)
        .toLowerCase()
        .replace(/:(22|80|443)$/, '') + u.slice(slash);
}

/** The remote URLs of the Git work tree at `root` (its `.git/config`); none when unreadable. */
async function remoteUrls(root: string): Promise<string[]> {
  const text = await readFile(join(root, '.git', 'config'), 'utf8').catch(() => '');
  return [...text.matchAll(/^\s*url\s*=\s*(.+?)\s*$/gm)].map((m) => gitUrlKey(m[1]!));
}

const objectKey = (v: unknown): string =>
  `${String(valueAt(v, ['metadata', 'namespace']) ?? 'default')}/${String(valueAt(v, ['metadata', 'name']))}`;

function stringMap(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return out;
  for (const [k, x] of Object.entries(v)) if (typeof x === 'string') out[k] = x;
  return out;
}

export async function readInputs(
  paths: string[],
  kustomize: KustomizeBuild,
  limits: SizeLimits,
): Promise<{ inputs: InputText[]; problems: Problem[]; unread: UnreadTree }> {
  if (paths.length === 0) await walkConfigPaths(paths); // the usage error for no -c at all
  const problems: Problem[] = [];
  const state = newWalkState();
  const all: Input[] = [];
  /** `ns/name` of every Flux GitRepository read, to its URL. */
  const gitUrls = new Map<string, string>();
  const remotes = new Map<string, Promise<string[]>>();
  const consumed = new Set<string>();
  const flux: FluxKustomization[] = [];
  const roots = new Map<string, string | null>();
  const followed = new Set<string>();

  /** The Flux Kustomizations and GitRepositories of an input, with where each is written. */
  const docsOf = async (
    input: Input,
  ): Promise<{ kustomizations: SourceDoc[]; gitRepositories: SourceDoc[] }> => {
    const file = input.kind === 'file' ? input.path : input.kfile!;
    const text = input.text!;
    const kustomizations = fluxObjects(text, file, 'Kustomization', FLUX_KUSTOMIZE_GROUP);
    const gitRepositories = fluxObjects(text, file, 'GitRepository', FLUX_SOURCE_GROUP);
    if (input.kind === 'file' || kustomizations.length === 0) return { kustomizations, gitRepositories };
    const resources = await sourceDocs(input.resources ?? [], limits);
    const patches = await sourceDocs(input.patches ?? [], limits);
    return {
      kustomizations: kustomizations.map((d) => mapBuiltDocument(d, file, resources, patches)),
      gitRepositories,
    };
  };
  /**
   * The GitRepository a Flux Kustomization applies from, when it is known to be another
   * repository than the work tree at `root`: its URL is neither a remote of that work tree nor
   * (without remotes that match any GitRepository) the URL of the bootstrap GitRepository
   * flux-system/flux-system. Unknown sources are taken to be this repository, as before.
   */
  const otherRepository = async (
    k: SourceDoc,
    root: string,
  ): Promise<{ name: string; url: string } | undefined> => {
    const kind = valueAt(k.value, ['spec', 'sourceRef', 'kind']);
    if (kind !== undefined && kind !== 'GitRepository') return undefined;
    const name = valueAt(k.value, ['spec', 'sourceRef', 'name']);
    if (typeof name !== 'string') return undefined;
    const ns =
      valueAt(k.value, ['spec', 'sourceRef', 'namespace']) ??
      valueAt(k.value, ['metadata', 'namespace']) ??
      'default';
    const key = `${String(ns)}/${name}`;
    const url = gitUrls.get(key);
    if (url === undefined) return undefined;
    let mine = remotes.get(root);
    if (!mine) remotes.set(root, (mine = remoteUrls(root)));
    const remoteKeys = await mine;
    const known = [...gitUrls.values()].map(gitUrlKey);
    const home = remoteKeys.some((r) => known.includes(r))
      ? remoteKeys
      : gitUrls.has('flux-system/flux-system')
        ? [gitUrlKey(gitUrls.get('flux-system/flux-system')!)]
        : [];
    if (home.length === 0 || home.includes(gitUrlKey(url))) return undefined;
    return { name: key, url };
  };

  let pending = paths;
  while (pending.length > 0) {
    const found = await walkConfigPaths(pending, state);
    const fresh: Input[] = [
      ...found.files.map((f): Input => ({
        kind: 'file',
        path: f,
        real: found.real.get(f)!,
        top: found.top.get(f)!,
      })),
      ...found.kustomizations.map((d): Input => ({
        kind: 'kustomization',
        path: d,
        real: found.real.get(d)!,
        top: found.top.get(d)!,
      })),
    ];
    // What every kustomization reads first, so that a base is not built on its own for nothing.
    await each(
      fresh.filter((i) => i.kind === 'kustomization'),
      8,
      async (input) => {
        const sources = await unitSources(input.path, limits.fileBytes);
        input.kfile = (await kustomizationFile(input.path)) ?? join(input.path, 'kustomization.yaml');
        input.resources = sources.resources;
        input.patches = sources.patches;
        for (const c of sources.consumed) consumed.add(resolve(c));
      },
    );
    await each(fresh, 4, async (input) => {
      if (consumed.has(resolve(input.path))) return;
      if (input.kind === 'file') {
        let read;
        try {
          read = await readBounded(input.path, limits.fileBytes);
        } catch (err) {
          problems.push({
            location: { file: input.path },
            severity: 'error',
            message: `cannot read: ${(err as Error).message}`,
          });
          return;
        }
        if ('tooBig' in read) {
          problems.push({
            location: { file: input.path },
            severity: read.mentionsPawlKind ? 'error' : 'warning',
            message: `is ${sizeWords(read.tooBig)}, over pawl's limit of ${limitWords(limits.fileBytes)} per file; not read${read.mentionsPawlKind ? '' : " (it names none of pawl's kinds)"}; split it, or see docs/configuration.md#size-limits`,
          });
          return;
        }
        keep(input, read.text, limits);
        return;
      }
      const kfile = input.kfile!;
      const built = await kustomize(input.path);
      const overLimit = (size: string): void => {
        problems.push({
          location: { file: kfile },
          severity: 'error',
          message: `kustomize built ${size} from ${input.path}, over pawl's limit of ${limitWords(limits.buildBytes)} per build; not read; split the kustomization, or see docs/configuration.md#size-limits`,
        });
      };
      if (built.ok) {
        // An injected build may not bound its output itself.
        if (built.stdout.length > limits.buildBytes || Buffer.byteLength(built.stdout) > limits.buildBytes)
          overLimit(sizeWords(Buffer.byteLength(built.stdout)));
        else keep(input, built.stdout, limits);
        return;
      }
      if (built.failure === 'overflow') {
        overLimit(`more than ${limitWords(limits.buildBytes)}`);
        return;
      }
      const words = built.failure === 'exit' ? kustomizeWords(built.stderr) : '';
      // kubectl before 1.21 carries kustomize v2, which takes no directory in `resources`.
      const tooOld = /must be a file \(got d=/.test(words)
        ? ' (this kustomize is too old for directories in resources: use kubectl 1.21 or later, or set PAWL_KUBECTL)'
        : '';
      problems.push({
        location: { file: kfile },
        severity: 'error',
        message:
          built.failure === 'missing'
            ? `cannot build ${input.path} with kustomize: ${built.message}; install kubectl 1.21 or later (its "kubectl kustomize"), or set PAWL_KUBECTL to one`
            : `kustomize could not build ${input.path}: ${words || built.message}${tooOld}`,
      });
    });
    all.push(...fresh);

    // Flux Kustomizations found so far: follow their paths out of what was read. A path inside
    // a directory that was built (not searched file by file) and that no build reads is read
    // on its own, as Flux applies it.
    pending = [];
    const read = await Promise.all(
      fresh.map(async (input) => ({
        input,
        docs: input.text === undefined ? { kustomizations: [], gitRepositories: [] } : await docsOf(input),
      })),
    );
    for (const { docs } of read) {
      for (const g of docs.gitRepositories) {
        const url = valueAt(g.value, ['spec', 'url']);
        if (typeof url === 'string') gitUrls.set(objectKey(g.value), url);
      }
    }
    for (const { input, docs } of read) {
      for (const k of docs.kustomizations) {
        const root =
          (await gitRoot(input.kind === 'file' ? dirname(input.real) : input.real, roots)) ?? input.top;
        const path = valueAt(k.value, ['spec', 'path']);
        const target = resolve(root, typeof path === 'string' ? path : '.');
        const real = await realpath(target).catch(() => undefined);
        const sourceKind = valueAt(k.value, ['spec', 'sourceRef', 'kind']);
        const other = await otherRepository(k, root);
        if (other) {
          problems.push({
            location: { file: k.fileOf?.(['spec', 'path']) ?? k.file, line: k.lineOf(['spec', 'path']) },
            object: `Kustomization ${objectKey(k.value)}`,
            severity: 'warning',
            message: `spec.path ${typeof path === 'string' ? path : '.'} is in GitRepository ${other.name} (${redactUrl(other.url)}), another repository; pawl does not read it from this work tree. To have pawl see what it applies, run pawl on a checkout of that repository`,
          });
          continue;
        }
        flux.push({
          name: objectKey(k.value),
          file: k.file,
          target: real ?? target,
          substitute: stringMap(valueAt(k.value, ['spec', 'postBuild', 'substitute'])),
          substituteFrom: Array.isArray(valueAt(k.value, ['spec', 'postBuild', 'substituteFrom'])),
        });
        if (real === undefined || (sourceKind !== undefined && sourceKind !== 'GitRepository')) continue;
        if (followed.has(real) || state.visitedDirs.has(real) || consumed.has(real) || consumed.has(target))
          continue;
        followed.add(real);
        pending.push(real);
      }
    }
  }

  const inputs: InputText[] = [];
  for (const input of all) {
    if (input.text === undefined) continue;
    // Read through the kustomization that reads it, not on its own.
    if (consumed.has(resolve(input.path))) continue;
    const owner = flux
      .filter((k) => inside(k.target, input.real))
      .sort((a, b) => b.target.length - a.target.length)[0];
    let text = input.text;
    const oversized = [...(input.oversized ?? [])];
    if (owner && Object.keys(owner.substitute).length + (owner.substituteFrom ? 1 : 0) > 0) {
      // A substitution can make a document larger: the limit holds for what is parsed.
      const cut = cutOversizedDocuments(
        substituteDocuments(text, owner.substitute, { unset: owner.substituteFrom ? 'keep' : 'empty' }),
        limits.documentBytes,
      );
      text = cut.text;
      oversized.push(...cut.oversized);
    }
    if (input.kind === 'file') {
      inputs.push({ file: input.path, text, oversized });
      continue;
    }
    const resources = await sourceDocs(input.resources ?? [], limits);
    const patches = await sourceDocs(input.patches ?? [], limits);
    const kfile = input.kfile!;
    inputs.push({
      file: kfile,
      text,
      oversized,
      mapDoc: (doc) => mapBuiltDocument(doc, kfile, resources, patches),
    });
  }
  // What was read, and the trees it was read from, for "a file defines it but is not applied".
  const read = new Set<string>();
  for (const input of all) {
    if (input.kind === 'file') read.add(input.real);
    for (const f of [...(input.resources ?? []), ...(input.patches ?? [])])
      read.add(await realpath(f).catch(() => resolve(f)));
  }
  const trees = new Set<string>();
  for (const p of paths) {
    const real = await realpath(p);
    const st = await stat(real);
    const dir = st.isDirectory() ? real : dirname(real);
    trees.add((await gitRoot(dir, roots)) ?? dir);
  }
  const built = new Set(all.filter((i) => i.kind === 'kustomization').map((i) => i.real));
  return { inputs, problems, unread: { trees: [...trees], read, built } };
}

/** What `readInputs` read, for finding objects defined in files it did not read. */
export interface UnreadTree {
  /** The Git work trees (else directories) of the `-c` paths. */
  trees: string[];
  /** Canonical paths of every file read, on its own or through a build. */
  read: Set<string>;
  /** Canonical paths of the kustomization directories built. */
  built: Set<string>;
}

/** An object of pawl's named by something, that no file read defines. */
export interface Wanted {
  kind: string;
  namespace: string;
  name: string;
}

const DEFINES = /^kind:\s*["']?(GitRepository|Secret)\b/m;

/**
 * For each wanted object that a YAML file of the trees defines although it was not read, that
 * file and how to have it applied: Flux applies a directory's kustomization.yaml and only what
 * it lists, so the file (or its directory) must be listed there. Keyed `Kind/ns/name`.
 */
export async function findUnread(
  tree: UnreadTree,
  wanted: readonly Wanted[],
  limits: SizeLimits,
): Promise<Map<string, { file: string; include: string }>> {
  const out = new Map<string, { file: string; include: string }>();
  const keys = new Set(wanted.map((w) => `${w.kind}/${w.namespace}/${w.name}`));
  if (keys.size === 0) return out;
  const visit = async (dir: string): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      const full = join(dir, e.name);
      if (e.isDirectory()) {
        if (!e.name.startsWith('.') && e.name !== 'node_modules') await visit(full);
        continue;
      }
      if (!e.isFile() || !/\.ya?ml$/i.test(e.name) || tree.read.has(full)) continue;
      // The size limits hold here too: an oversized file is no answer, just left out.
      const read = await readBounded(full, limits.fileBytes).catch(() => undefined);
      if (read === undefined || 'tooBig' in read) continue;
      const text = cutOversizedDocuments(read.text, limits.documentBytes).text;
      if (!DEFINES.test(text)) continue;
      for (const doc of parseDocuments(full, text).docs) {
        const kind = valueAt(doc.value, ['kind']);
        const key = `${String(kind)}/${objectKey(doc.value)}`;
        if (!keys.has(key) || out.has(key)) continue;
        out.set(key, { file: full, include: await howToInclude(full, tree) });
      }
    }
  };
  for (const root of tree.trees) await visit(root);
  return out;
}

/** Where to list `file` so that Flux applies it: the nearest kustomization above it that was built. */
async function howToInclude(file: string, tree: UnreadTree): Promise<string> {
  let child = file;
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    const kfile = await kustomizationFile(dir);
    if (kfile && (tree.built.has(dir) || tree.read.has(kfile))) {
      return `list ${relative(dir, child)} under resources: in ${kfile}`;
    }
    if (tree.trees.includes(dir) || dirname(dir) === dir) break;
    child = dir;
  }
  return `pass -c ${file} too, or list it in a kustomization.yaml that Flux applies`;
}

/**
 * Documents of the files a build read, for finding where a built object came from. Oversized
 * files and documents are left out in silence: the build itself reports them.
 */
async function sourceDocs(files: readonly string[], limits: SizeLimits): Promise<SourceDoc[]> {
  const docs: SourceDoc[] = [];
  for (const file of files) {
    const read = await readBounded(file, limits.fileBytes).catch(() => undefined);
    if (read === undefined || 'tooBig' in read) continue;
    docs.push(...parseDocuments(file, cutOversizedDocuments(read.text, limits.documentBytes).text).docs);
  }
  return docs;
}
