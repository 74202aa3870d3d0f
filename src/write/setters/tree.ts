/**
 * Flux's file discovery for setters (internal/update/filereader.go): `*.yaml`, `*.yml` and
 * files named `Kustomization` under the update path, screened for the marker token before
 * parsing. Nothing outside the repository root is read or handed back for writing.
 */
import { realpath, stat } from 'node:fs/promises';
import { closeSync, openSync, readSync, readdirSync } from 'node:fs';
import { isUtf8 } from 'node:buffer';
import type { Dirent } from 'node:fs';
import { isAbsolute, join, relative, sep } from 'node:path';
import { UsageError } from '../../util/index.js';
import { MARKER_TOKEN, findMarkers, type Marker } from './markers.js';

export interface ScannedFile {
  /** Relative to the repository root, '/' separators. */
  file: string;
  /** Absolute, symlinks resolved: where a rewrite goes. */
  path: string;
  text: string;
  markers: Marker[];
}

export interface FileProblem {
  file: string;
  message: string;
}

export interface MarkerScan {
  /** Every file that contains the marker token and parsed, in path order (markers may be empty). */
  files: ScannedFile[];
  /** Files that could not be read or parsed. */
  errors: FileProblem[];
  /** Skipped on purpose, e.g. a symlink that points out of the repository. */
  warnings: FileProblem[];
}

const TOKEN = Buffer.from(MARKER_TOKEN);
const READ_BATCH = 128;
const scratch = Buffer.allocUnsafe(1 << 16);

/** What a marked file that is not UTF-8 is reported as (it is never decoded, so never rewritten). */
export const NOT_UTF8 =
  'not UTF-8, left untouched (pawl edits UTF-8 files only; re-encode it to UTF-8 to have it updated)';

/**
 * The file's text if it contains the marker token, else null; unmarked files are never decoded.
 * `false` for a marked file that is not valid UTF-8: decoding would turn each stray byte (a
 * Latin-1 `é`) into U+FFFD, and writing the text back would change bytes no marker owns.
 */
function readIfMarked(path: string): string | null | false {
  const fd = openSync(path, 'r');
  try {
    // Most manifests fit the scratch buffer; reading to the end without a stat first saves a
    // system call per file.
    let buf = scratch;
    let off = 0;
    for (;;) {
      if (off === buf.length) {
        const bigger = Buffer.allocUnsafe(buf.length * 4);
        buf.copy(bigger, 0, 0, off);
        buf = bigger;
      }
      const n = readSync(fd, buf, off, buf.length - off, null);
      if (n === 0) break;
      off += n;
    }
    const view = buf.subarray(0, off);
    if (view.indexOf(TOKEN) < 0) return null;
    if (!isUtf8(view)) return false;
    return view.toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/** Rejects an `update.path` that is absolute or climbs with `..`; returns it normalised ('' for the root). */
export function checkUpdatePath(updatePath: string): string {
  const p = updatePath.replace(/\\/g, '/');
  if (isAbsolute(updatePath) || p.startsWith('/') || /^[A-Za-z]:/.test(p)) {
    throw new UsageError(
      `update.path "${updatePath}" is absolute; give a path relative to the repository root`,
    );
  }
  const segments = p.split('/').filter((s) => s !== '' && s !== '.');
  if (segments.includes('..')) {
    throw new UsageError(`update.path "${updatePath}" contains ".."; it must stay inside the repository`);
  }
  return segments.join('/');
}

function isCandidate(name: string): boolean {
  return name.endsWith('.yaml') || name.endsWith('.yml') || name === 'Kustomization';
}

function inside(root: string, p: string): boolean {
  const r = relative(root, p);
  return r === '' || (!r.startsWith('..') && !isAbsolute(r));
}

function toRel(root: string, p: string): string {
  return relative(root, p).split(sep).join('/');
}

function errCode(err: unknown): string | undefined {
  return err && typeof err === 'object' && 'code' in err
    ? String((err as { code: unknown }).code)
    : undefined;
}

interface Candidate {
  /** The path as found in the tree (relative), for messages. */
  found: string;
  /** Real path to read and write. */
  real: string;
  /** `real` relative to the root, '/' separators. */
  file: string;
  viaLink: boolean;
}

/**
 * One candidate file as a scan takes it: scanned, null when it has no marker token, or the
 * problem that keeps it from being rewritten.
 */
function scanFile(real: string, file: string): ScannedFile | string | null {
  let text: string | null | false;
  try {
    text = readIfMarked(real);
  } catch (err) {
    return `cannot read: ${errCode(err) ?? String(err)}`;
  }
  if (text === null) return null;
  if (text === false) return NOT_UTF8;
  // Parsing stays on this thread: a worker thread was tried and cost more than it saved (each
  // isolate warms up the YAML parser's JIT on its own; see bench/setters.bench.ts).
  const { markers, error } = parsedMarkers(real, file, text);
  return error !== null ? `not valid YAML, left untouched: ${error}` : { file, path: real, text, markers };
}

export interface ScanOptions {
  /**
   * The working tree's seal (the workspace's `untouched`): when a scan of this root and path was
   * kept under the same seal, the tree is byte for byte what it was then, and that scan is the
   * answer without a directory listed or a file read.
   */
  seal?: string | null;
}

/**
 * Walks `updatePath` under `root` and parses the files that contain the marker token. Symlinked
 * directories are not followed (as Flux's filepath.Walk); a symlinked file is read only when its
 * target is inside the root (a dangling one is skipped silently, one pointing outside with a
 * warning). `.git` is never entered.
 */
export async function scanTree(
  root: string,
  updatePath: string,
  opts: ScanOptions = {},
): Promise<MarkerScan> {
  const rel = checkUpdatePath(updatePath);
  if (opts.seal) {
    const k = kept.get(keptKey(root, rel));
    if (k !== undefined && k.seal === opts.seal) {
      scansReused++;
      return { files: [...k.scan.files], errors: [], warnings: [...k.scan.warnings] };
    }
  }
  const realRoot = await realpath(root);
  const result: MarkerScan = { files: [], errors: [], warnings: [] };
  let start: string;
  try {
    start = await realpath(join(realRoot, rel));
  } catch (err) {
    throw new UsageError(
      `update path "${updatePath}" does not exist under ${root} (${errCode(err) ?? String(err)})`,
    );
  }
  if (!inside(realRoot, start)) {
    throw new UsageError(
      `update path "${updatePath}" resolves outside the repository (${start}); refusing to touch it`,
    );
  }

  const candidates: Candidate[] = [];
  const startStat = await stat(start);
  if (startStat.isDirectory()) await walk(realRoot, start, toRel(realRoot, start), candidates, result);
  else {
    const file = toRel(realRoot, start);
    candidates.push({ found: file, real: start, file, viaLink: false });
  }

  // A file reached both directly and through a symlink is processed once, under its own name.
  candidates.sort(
    (a, b) => Number(a.viaLink) - Number(b.viaLink) || (a.found < b.found ? -1 : a.found > b.found ? 1 : 0),
  );
  const seen = new Set<string>();
  const unique = candidates.filter((c) => (seen.has(c.real) ? false : (seen.add(c.real), true)));

  // Reads are synchronous in small batches: for thousands of small files that is several times
  // faster than promise-based reads through the thread pool, and yielding between batches keeps
  // the event loop responsive for a daemon.
  const scanned: ScannedFile[] = [];
  for (let i = 0; i < unique.length; i++) {
    if (i % READ_BATCH === READ_BATCH - 1) await new Promise((r) => setImmediate(r));
    const c = unique[i]!;
    const r = scanFile(c.real, c.file);
    if (r === null) continue;
    if (typeof r === 'string') result.errors.push({ file: c.file, message: r });
    else scanned.push(r);
  }
  result.files = scanned.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
  result.errors.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
  return result;
}

/**
 * A daemon's last scan of each workspace and update path, with the seal of the working tree it
 * describes (issue 27): the next pass over an untouched tree (the commit its last pass left, the
 * index not written since) needs neither the walk nor the reads, ~500 files a webhook pass in a
 * repository of 500 manifests. Bounded by the text held, as `parsed` is.
 */
const kept = new Map<string, { seal: string; scan: MarkerScan; chars: number }>();
let keptChars = 0;
let scansReused = 0;

const keptKey = (root: string, rel: string): string => `${root}\n${rel}`;

/** How many scans were answered from a kept one (tests count them). */
export function reusedScans(): number {
  return scansReused;
}

/** Forget every kept scan (tests). */
export function forgetScans(): void {
  kept.clear();
  keptChars = 0;
}

/**
 * Keeps `scan` of `root` and `updatePath` as the tree sealed by `seal` holds it, after the pass
 * rewrote `rewritten` (paths relative to the root, each a file of the scan): those are read
 * again, so the kept scan is what the tree holds now. A scan with problems, or a rewritten file
 * that is no longer a marked UTF-8 file that parses, keeps nothing.
 */
export function keepScan(
  root: string,
  updatePath: string,
  seal: string,
  scan: MarkerScan,
  rewritten: Iterable<string>,
): void {
  const key = keptKey(root, checkUpdatePath(updatePath));
  const old = kept.get(key);
  if (old !== undefined) {
    kept.delete(key);
    keptChars -= old.chars;
  }
  if (scan.errors.length > 0) return;
  const again = new Set(rewritten);
  const files: ScannedFile[] = [];
  let chars = 0;
  for (const f of scan.files) {
    let file = f;
    if (again.has(f.file)) {
      const r = scanFile(f.path, f.file);
      if (r === null || typeof r === 'string') return;
      file = r;
      again.delete(f.file);
    }
    files.push(file);
    chars += file.text.length;
  }
  if (again.size > 0 || keptChars + chars > PARSED_CHARS) return;
  kept.set(key, { seal, scan: { files, errors: [], warnings: [...scan.warnings] }, chars });
  keptChars += chars;
}

/**
 * The markers of files parsed before, by path and exact text: a daemon reads the same few
 * hundred files pass after pass and only the one a pass wrote has changed, so the rest need no
 * parse (issue 27). The text is always read afresh and compared whole; only the parse of equal
 * text is reused, and `findMarkers` is a function of its text and name alone. Bounded by the
 * text it holds: past the bound it starts again.
 */
const parsed = new Map<string, { file: string; text: string; markers: Marker[] }>();
let parsedChars = 0;
const PARSED_CHARS = 16 << 20;

function parsedMarkers(
  real: string,
  file: string,
  text: string,
): { markers: Marker[]; error: string | null } {
  // By the real path alone, the name beside it: a key of both was ~0.17 KB a file (issue 27).
  const known = parsed.get(real);
  if (known !== undefined && known.file === file && known.text === text)
    return { markers: known.markers, error: null };
  const r = findMarkers(text, file);
  if (r.error !== null) return r;
  if (known !== undefined) parsedChars -= known.text.length;
  if (parsedChars + text.length > PARSED_CHARS) {
    parsed.clear();
    parsedChars = 0;
  }
  // A copy of exact length: the array grew by pushes, to room for 17 markers when it holds one
  // (~140 bytes a file, 10,000 files in a daemon at 10,000 images). The caller gets the copy
  // too: a kept scan of the tree holds it, not the array it was copied from.
  const markers = r.markers.slice();
  parsed.set(real, { file, text, markers });
  parsedChars += text.length;
  return { markers, error: null };
}

/**
 * `dir` is a real, normalised path and `rel` its path from the root ('' for the root), so
 * children's paths are plain concatenations: `path.join`/`relative` per file were a noticeable
 * part of a scan of thousands of files. Directories are listed synchronously, yielding to the
 * event loop every `READ_BATCH` of them, as files are read: a promise and a thread-pool round
 * trip a directory cost more than the listing (a daemon's pass over 500 one-file directories).
 */
async function walk(
  realRoot: string,
  dir: string,
  rel: string,
  out: Candidate[],
  result: MarkerScan,
): Promise<void> {
  const todo: [string, string][] = [[dir, rel]];
  const links: Promise<void>[] = [];
  for (let listed = 1; todo.length > 0; listed++) {
    if (listed % READ_BATCH === 0) await new Promise((r) => setImmediate(r));
    const [d, r] = todo.pop()!;
    let entries: Dirent[];
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch (err) {
      result.errors.push({
        file: r || '.',
        message: `cannot list directory: ${errCode(err) ?? String(err)}`,
      });
      continue;
    }
    const prefix = d.endsWith(sep) ? d : d + sep;
    const relPrefix = r === '' ? '' : r + '/';
    for (const e of entries) {
      const abs = prefix + e.name;
      if (e.isDirectory()) {
        if (e.name !== '.git') todo.push([abs, relPrefix + e.name]);
      } else if (e.isFile()) {
        if (isCandidate(e.name)) {
          const file = relPrefix + e.name;
          out.push({ found: file, real: abs, file, viaLink: false });
        }
      } else if (e.isSymbolicLink() && isCandidate(e.name)) {
        links.push(followLink(realRoot, abs, relPrefix + e.name, out, result));
      }
    }
  }
  await Promise.all(links);
}

async function followLink(
  realRoot: string,
  abs: string,
  found: string,
  out: Candidate[],
  result: MarkerScan,
): Promise<void> {
  let target: string;
  try {
    target = await realpath(abs);
  } catch {
    return; // dangling (or a loop): Flux skips it without a word
  }
  if (!inside(realRoot, target)) {
    result.warnings.push({
      file: found,
      message: `is a symbolic link to ${target}, outside the repository; pawl does not follow it, so its markers are not updated`,
    });
    return;
  }
  try {
    if (!(await stat(target)).isFile()) return;
  } catch {
    return;
  }
  out.push({ found, real: target, file: toRel(realRoot, target), viaLink: true });
}
