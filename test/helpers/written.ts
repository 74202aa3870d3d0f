/** What this process has written so far, for the benches and tests that count a store's writes. */
import { readFileSync } from 'node:fs';

/**
 * Bytes this process has written through system calls so far (`wchar` in /proc/self/io, Linux),
 * or NaN where that is not to be had: a SQLite store's WAL, its checkpoints and its temporary files.
 */
export function bytesWritten(): number {
  try {
    return Number(/^wchar: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'))?.[1] ?? NaN);
  } catch {
    return NaN;
  }
}
