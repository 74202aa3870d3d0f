/**
 * Waiting for a bare repository's branch to move without spending a CPU on it. The latency
 * benches used to read the ref file every millisecond: on a 2-CPU machine beside two busy
 * processes, that loop (readFile through libuv's pool, a thousand times a second) was itself the
 * third busy process, and its process also serves the git remote, so it stretched the very
 * pushes and fetches it timed (docs/performance.md, "the latency benches' own loop").
 *
 * git updates a loose ref by renaming `main.lock` onto `main`, which inotify reports on the
 * directory at once. A slow poll stays behind the watch for what it would miss (packed refs, a
 * directory replaced).
 */
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/** How long a wait lasts without an event before the files are read anyway. */
const FALLBACK_MS = 100;

export interface RefWatch {
  /** The files' contents (trimmed; '' for a missing one), in the order given. */
  read(): Promise<string[]>;
  /** Resolves on the next change seen in any of the files' directories, or after FALLBACK_MS. */
  changed(): Promise<void>;
  close(): void;
}

export function watchRefs(files: readonly string[]): RefWatch {
  let wake: (() => void) | undefined;
  let pending = false;
  const notify = (): void => {
    if (wake) {
      const w = wake;
      wake = undefined;
      w();
    } else pending = true;
  };
  const watchers: FSWatcher[] = [...new Set(files.map((f) => dirname(f)))].map((dir) =>
    watch(dir, { persistent: false }, notify),
  );
  return {
    read: () => Promise.all(files.map(async (f) => (await readFile(f, 'utf8').catch(() => '')).trim())),
    changed: () => {
      if (pending) {
        pending = false;
        return Promise.resolve();
      }
      return new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          wake = undefined;
          resolve();
        }, FALLBACK_MS);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    },
    close: () => {
      for (const w of watchers) w.close();
    },
  };
}
