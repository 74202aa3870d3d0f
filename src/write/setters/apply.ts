/**
 * Flux's setter update (no guard): every marker whose policy has an image gets the value Flux
 * would write. Used by `pawl setters apply` and by `pawl run` after its own decisions.
 */
import { closeSync, fstatSync, ftruncateSync, openSync, readSync, writeSync } from 'node:fs';
import type { Marker } from './markers.js';
import { splice, valueFor, type ImageValue, type Splice } from './rewrite.js';
import { scanTree, type FileProblem } from './tree.js';

export { parseImage } from './rewrite.js';
export type { ImageValue } from './rewrite.js';

const WRITE_BATCH = 64;

export interface SetterChange {
  file: string;
  line: number;
  setter: string;
  /** `ns/name` */
  policy: string;
  old: string;
  new: string;
}

export interface ApplyResult {
  changes: SetterChange[];
  /** Relative paths of the files rewritten (empty on a dry run or when any file failed to parse). */
  filesWritten: string[];
  errors: FileProblem[];
  warnings: FileProblem[];
}

/** The edits Flux would make to one file's markers; pure. */
export function planEdits(
  markers: readonly Marker[],
  images: ReadonlyMap<string, ImageValue>,
): { marker: Marker; value: string }[] {
  const edits: { marker: Marker; value: string }[] = [];
  for (const marker of markers) {
    const image = images.get(`${marker.policy.namespace}:${marker.policy.name}`);
    if (!image) continue;
    const value = valueFor(marker, image);
    if (value !== marker.value) edits.push({ marker, value });
  }
  return edits;
}

export function changeOf(edit: { marker: Marker; value: string }): SetterChange {
  const { marker } = edit;
  return {
    file: marker.file,
    line: marker.line,
    setter: marker.setter,
    policy: `${marker.policy.namespace}/${marker.policy.name}`,
    old: marker.value,
    new: edit.value,
  };
}

/**
 * Scans `updatePath` under `root`, computes every change, and — unless a file failed to parse
 * or `dryRun` is set — rewrites the changed files in place (`rewriteFileSync`). When any file fails to parse,
 * nothing is written (the changes are still listed) and `errors` names the files.
 */
export async function applySetters(
  root: string,
  updatePath: string,
  images: ReadonlyMap<string, ImageValue>,
  opts: { dryRun?: boolean } = {},
): Promise<ApplyResult> {
  const scan = await scanTree(root, updatePath);
  const result: ApplyResult = {
    changes: [],
    filesWritten: [],
    errors: [...scan.errors],
    warnings: scan.warnings,
  };
  const writes: { file: string; path: string; before: string; splice: Splice }[] = [];
  for (const f of scan.files) {
    const edits = planEdits(f.markers, images);
    if (edits.length === 0) continue;
    result.changes.push(...edits.map(changeOf));
    writes.push({ file: f.file, path: f.path, before: f.text, splice: splice(f.text, edits) });
  }
  if (opts.dryRun || result.errors.length > 0) return result;
  // Writes are synchronous, as the reads: a handful of small system calls per file cost far
  // less than a trip through the thread pool for each; yielding between batches keeps the event
  // loop responsive for a daemon.
  const written = new Array<boolean>(writes.length).fill(false);
  for (let i = 0; i < writes.length; i++) {
    if (i % WRITE_BATCH === WRITE_BATCH - 1) await new Promise((r) => setImmediate(r));
    const w = writes[i]!;
    try {
      writeSpliceSync(w.path, w.before, w.splice);
      written[i] = true;
    } catch (err) {
      result.errors.push({
        file: w.file,
        message: `cannot write: ${err instanceof Error ? err.message : String(err)}`,
      });
    }
  }
  result.filesWritten = writes.filter((_, i) => written[i]).map((w) => w.file);
  result.errors.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
  return result;
}

/**
 * Rewrites a file in place, writing only what changed: from the first changed byte to the last
 * when the length stays the same (a tag bump such as 1.2.3 → 1.2.4, the usual case), else from
 * the first changed byte to the end, then cutting the file to its new length. `before` must be
 * the file's content as read. The change is found by comparing the two texts; a caller that
 * knows the span it changes hands it to `writeSpliceSync` instead.
 */
export function rewriteFileSync(path: string, before: string, after: string): void {
  if (before === after) return;
  const min = Math.min(before.length, after.length);
  let p = commonPrefix(before, after, min);
  // Never split a surrogate pair: byte offsets are counted over whole characters.
  if (p > 0 && isHighSurrogate(before.charCodeAt(p - 1))) p--;
  // Where the change ends: for texts of one length, where their common suffix starts.
  let s = 0;
  if (before.length === after.length) {
    s = commonSuffix(before, after, min - p);
    if (s > 0 && isLowSurrogate(after.charCodeAt(after.length - s))) s--;
  }
  writeSpliceSync(path, before, {
    start: p,
    end: before.length - s,
    replacement: after.slice(p, after.length - s),
  });
}

/**
 * Writes `change` (rewrite.ts, `splice`) into the file whose content as read is `before`: the
 * span's bytes alone when their length stays the same, else everything from the span's start,
 * the file then cut to its new length. No new text is built and none compared with the old (a
 * pass over 1,000 files spent ~10 ms finding the change it already knew, issue 27). The span's
 * ends must fall between whole characters, as a marker's scalar does.
 *
 * Not through a temporary file and a rename, on purpose. Replacing a file gives it a new inode:
 * hard links break, and the owner, ACLs, extended attributes and SELinux label become the
 * writer's — `sudo pawl setters apply` in a person's checkout would hand their files to root.
 * Flux's own setters, kustomize and Renovate write in place too. And on this kind of work it is
 * the cost that matters: creating a temporary file and renaming it cost 0.3–0.4 ms of kernel
 * time per file here, rewriting a whole file 0.08 ms, writing the changed span 0.012 ms
 * (1,000 files; docs/performance.md, round 4). Every change is computed before any file is
 * written (`applySetters`), so a bad file stops the run before it touches anything; a file that
 * is no longer `before` is left alone (`FileChangedError`); a write that fails is undone from
 * `before` where the file system lets it. Only a crash in the middle of a length-changing write
 * can leave a file part old, part new: it is in Git, and `git diff` shows it.
 */
export function writeSpliceSync(path: string, before: string, change: Splice): void {
  const { start, end, replacement } = change;
  if (replacement === before.slice(start, end)) return;
  const at = Buffer.byteLength(before.slice(0, start), 'utf8');
  const oldBytes = Buffer.byteLength(before, 'utf8');
  const oldSpan = Buffer.byteLength(before.slice(start, end), 'utf8');
  const newSpan = Buffer.byteLength(replacement, 'utf8');
  const span = Buffer.from(newSpan === oldSpan ? replacement : replacement + before.slice(end), 'utf8');
  const newBytes = oldBytes - oldSpan + newSpan;
  const fd = openSync(path, 'r+');
  try {
    // Someone may have edited the file since it was read (a person's checkout): splicing bytes
    // placed by the old text into theirs would garble both. The whole file must still be the
    // text read; comparing costs a read of a file the page cache holds, about 10 µs.
    if (fstatSync(fd).size !== oldBytes || !holdsSync(fd, before, oldBytes)) throw new FileChangedError(path);
    try {
      writeAllSync(fd, span, at);
      if (newBytes < oldBytes) ftruncateSync(fd, newBytes);
    } catch (err) {
      try {
        writeAllSync(fd, Buffer.from(before.slice(start), 'utf8'), at);
        ftruncateSync(fd, oldBytes);
      } catch {
        // The file system refuses the old bytes too; the caller reports the first error.
      }
      throw err;
    }
  } finally {
    closeSync(fd);
  }
}

/** A file changed between pawl reading it and writing it; it is left as it is. */
export class FileChangedError extends Error {
  constructor(readonly path: string) {
    super('it changed since pawl read it, so pawl left it as it is; run the command again');
  }
}

/**
 * The length of the longest common prefix, by bisection over native string comparisons: a loop
 * over characters would run in V8's interpreter in a one-shot command, at about 30 ns each.
 */
function commonPrefix(a: string, b: string, max: number): number {
  let lo = 0;
  let hi = max;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (a.startsWith(b.slice(lo, mid), lo)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** The length of the longest common suffix, at most `max`. */
function commonSuffix(a: string, b: string, max: number): number {
  let lo = 0;
  let hi = max;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (a.endsWith(b.slice(b.length - mid, b.length - lo), a.length - lo)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Up to this size (most manifests) `holdsSync` reads and encodes into two reused buffers. */
const REUSED = 1 << 16;
/** Made by the first write, not at every command's start. */
let reused: { held: Buffer; expected: Buffer } | null = null;

/** Whether the file open at `fd` holds exactly `text`, which is `size` bytes of UTF-8. */
function holdsSync(fd: number, text: string, size: number): boolean {
  if (size > REUSED) {
    const buf = Buffer.allocUnsafe(size);
    return readAllSync(fd, buf, size) && buf.equals(Buffer.from(text, 'utf8'));
  }
  const { held, expected } = (reused ??= {
    held: Buffer.allocUnsafe(REUSED),
    expected: Buffer.allocUnsafe(REUSED),
  });
  if (!readAllSync(fd, held, size)) return false;
  expected.write(text, 0, size, 'utf8');
  return held.compare(expected, 0, size, 0, size) === 0;
}

/** Reads the file's first `size` bytes into `buf`; false when it holds fewer. */
function readAllSync(fd: number, buf: Buffer, size: number): boolean {
  for (let off = 0; off < size;) {
    const n = readSync(fd, buf, off, size - off, off);
    if (n === 0) return false;
    off += n;
  }
  return true;
}

function writeAllSync(fd: number, buf: Buffer, position: number): void {
  for (let off = 0; off < buf.length;) off += writeSync(fd, buf, off, buf.length - off, position + off);
}

function isHighSurrogate(c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff;
}

function isLowSurrogate(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff;
}
