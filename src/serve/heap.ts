/**
 * How much memory the daemon lets V8 keep. With node's defaults a daemon whose live heap is
 * ~40 MB (500 repositories, policies and automations) sits at 150–200 MB of RSS, because V8 grows
 * the young generation to 16 MB per semi-space and lets the old generation reach up to four times
 * its live size before collecting (docs/performance.md). Neither flag is allowed in NODE_OPTIONS,
 * and both are read by V8 each time it resizes the young generation or sets the next old-generation
 * limit, so setting them once the process runs takes effect — unlike `--max-semi-space-size`.
 * An old-space cap would do it too, but would turn a larger fleet into an out-of-memory crash.
 */
import { setFlagsFromString } from 'node:v8';

export const HEAP_MODES = ['small', 'default'] as const;
export type HeapMode = (typeof HEAP_MODES)[number];

/** Keep the young generation at its initial size; grow the old one by half its live size. */
export const SMALL_HEAP_FLAGS: readonly string[] = [
  '--semi-space-growth-factor=1',
  '--heap-growing-percent=50',
];

export function tuneHeap(mode: HeapMode, set: (flag: string) => void = setFlagsFromString): string[] {
  if (mode === 'default') return [];
  for (const flag of SMALL_HEAP_FLAGS) set(flag);
  return [...SMALL_HEAP_FLAGS];
}
