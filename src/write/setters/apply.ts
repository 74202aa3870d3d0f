/**
 * Flux's setter update (no guard): every marker whose policy has an image gets the value Flux
 * would write. Used by `pawl setters apply` and by `pawl run` after its own decisions.
 */
import { chmod, open, rename, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Marker } from './markers.js';
import { rewrite, valueFor, type ImageValue } from './rewrite.js';
import { scanTree, type FileProblem } from './tree.js';

export { parseImage } from './rewrite.js';
export type { ImageValue } from './rewrite.js';

const WRITE_CONCURRENCY = 16;

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
  // Each atomic write is several file-system calls; running a few files at once keeps the thread
  // pool busy instead of waiting on one call at a time.
  const written = new Array<boolean>(writes.length).fill(false);
  let next = 0;
  const writer = async (): Promise<void> => {
    for (let i = next++; i < writes.length; i = next++) {
      const w = writes[i]!;
      try {
        await writeFileAtomic(w.path, w.text);
        written[i] = true;
      } catch (err) {
        result.errors.push({
          file: w.file,
          message: `cannot write: ${err instanceof Error ? err.message : String(err)}`,
        });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(WRITE_CONCURRENCY, writes.length) }, writer));
  result.filesWritten = writes.filter((_, i) => written[i]).map((w) => w.file);
  result.errors.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
  return result;
}

/** Writes via a temporary file in the same directory and a rename, keeping the file's mode. */
export async function writeFileAtomic(path: string, text: string): Promise<void> {
  const mode = (await stat(path)).mode & 0o7777;
  const tmp = join(
    dirname(path),
    `.${basename(path)}.pawl-${process.pid}-${randomBytes(4).toString('hex')}.tmp`,
  );
  const fh = await open(tmp, 'wx', 0o600);
  try {
    try {
      // No fsync: the rename is what makes the write all-or-nothing for readers, and a Git
      // working tree is recoverable after a crash; syncing every file costs seconds on big trees.
      await fh.writeFile(text, 'utf8');
    } finally {
      await fh.close();
    }
    await chmod(tmp, mode);
    await rename(tmp, path);
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
}
