/**
 * Flux's setter update (no guard): every marker whose policy has an image gets the value Flux
 * would write. Used by `pawl setters apply` and by `pawl run` after its own decisions.
 */
import { closeSync, fchmodSync, openSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Marker } from './markers.js';
import { rewrite, valueFor, type ImageValue } from './rewrite.js';
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
 * or `dryRun` is set — writes the changed files atomically. When any file fails to parse,
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
  const writes: { file: string; path: string; text: string }[] = [];
  for (const f of scan.files) {
    const edits = planEdits(f.markers, images);
    if (edits.length === 0) continue;
    result.changes.push(...edits.map(changeOf));
    writes.push({ file: f.file, path: f.path, text: rewrite(f.text, edits) });
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
      writeFileAtomicSync(w.path, w.text);
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

/** Names temporary files: unique per process and write without drawing random bytes each time. */
const tmpTag = `${process.pid}-${randomBytes(4).toString('hex')}`;
let tmpSeq = 0;

/** Writes via a temporary file in the same directory and a rename, keeping the file's mode. */
export async function writeFileAtomic(path: string, text: string): Promise<void> {
  writeFileAtomicSync(path, text);
  return Promise.resolve();
}

/**
 * Rewrites a file of a workspace pawl owns, in place. Not atomic, on purpose: each pass starts by
 * forcing the workspace back to the remote's tree (`checkout --force`, `clean`), so a file left
 * half-written by a crash is never read or committed, and replacing 500 files through temporary
 * files and renames cost a cold pass about 0.2 s of CPU. A person's own checkout
 * (`pawl setters apply`) is written with `writeFileAtomic`.
 */
export function writeWorkspaceFileSync(path: string, text: string): void {
  writeFileSync(path, text, 'utf8');
}

/** `writeFileAtomic`, blocking. */
export function writeFileAtomicSync(path: string, text: string): void {
  const mode = statSync(path).mode & 0o7777;
  const tmp = join(dirname(path), `.${basename(path)}.pawl-${tmpTag}-${tmpSeq++}.tmp`);
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    try {
      // No fsync: the rename is what makes the write all-or-nothing for readers, and a Git
      // working tree is recoverable after a crash; syncing every file costs seconds on big trees.
      writeFileSync(fd, text, 'utf8');
      fchmodSync(fd, mode);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      // already gone
    }
    throw err;
  }
}
