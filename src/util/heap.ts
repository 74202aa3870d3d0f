/**
 * How much memory pawl lets V8 keep beyond its live heap. With node's defaults V8 grows the young
 * generation to 16 MB per semi-space and lets the old generation reach up to four times its live
 * size before a full collection: the daemon, whose live heap is ~40 MB with 500 objects of each
 * kind, sat at 150–200 MB of RSS, and a cold pass peaked ~25 MB higher than it needs
 * (docs/performance.md). The flags below are not allowed in NODE_OPTIONS, and V8 reads them each
 * time it resizes the young generation or sets the next old-generation limit, so setting them
 * once the process runs takes effect — unlike `--max-semi-space-size`, read once at start-up. An
 * old-space cap would do it too, but would turn a larger fleet into an out-of-memory crash.
 */
import { setFlagsFromString } from 'node:v8';

export const HEAP_MODES = ['small', 'default'] as const;
export type HeapMode = (typeof HEAP_MODES)[number];

/** Keep the young generation at its initial size; grow the old one by half its live size. */
export const SMALL_HEAP_FLAGS: readonly string[] = [
  '--semi-space-growth-factor=1',
  '--heap-growing-percent=50',
];

/**
 * A one-shot command only keeps its young generation small: its old generation is collected
 * when the process exits, and a tighter limit would only add full collections to a pass.
 */
export const ONE_SHOT_HEAP_FLAGS: readonly string[] = ['--semi-space-growth-factor=1'];

/** The daemon's `--heap` mode: the flags set, none for `default`. */
export function tuneHeap(mode: HeapMode, set: (flag: string) => void = setFlagsFromString): string[] {
  if (mode === 'default') return [];
  for (const flag of SMALL_HEAP_FLAGS) set(flag);
  return [...SMALL_HEAP_FLAGS];
}

/** Whoever starts node with semi-space or heap-growth flags of their own keeps them. */
export function heapFlagsGiven(execArgv: readonly string[], nodeOptions = ''): boolean {
  return /semi[-_]space|heap[-_]growing/.test(`${execArgv.join(' ')} ${nodeOptions}`);
}

/**
 * A one-shot command runs without V8's optimizing compiler: its hot functions run for seconds,
 * not long enough for TurboFan's compilations (on background threads, but CPU all the same) to
 * pay back. On the 500-repository pass: not-due 0.54–0.61 s → 0.43–0.46 s of CPU, warm
 * 1.46–1.60 → 1.29–1.38 s, cold 2.27–2.62 → 2.16–2.43 s (docs/performance.md). The daemon,
 * which runs for days, keeps it.
 */
export const ONE_SHOT_V8_FLAGS: readonly string[] = ['--no-opt'];

/** Whoever starts node with optimizer flags of their own keeps them. */
export function optimizerFlagsGiven(execArgv: readonly string[], nodeOptions = ''): boolean {
  return /--(no-)?(opt|turbofan|maglev)\b/.test(`${execArgv.join(' ')} ${nodeOptions}`);
}

/**
 * The daemon starts as a one-shot command does, without TurboFan, and turns it on once its first
 * pass is done: the start (every repository scanned, the first automation pass) is a burst of
 * seconds like a one-shot pass, where TurboFan's compilations cost more than they pay back (the
 * 500-repository first pass: 2,140–2,210 ms of CPU with it, 1,710–1,830 ms without,
 * docs/performance.md), while the days of passes after it are what the optimizer is for. V8 reads
 * the flag each time it considers a function for optimization, so setting it at run time takes
 * effect: functions hot from then on are optimized (test/util/heap.test.ts checks this V8 does).
 */
export const DAEMON_START_V8_FLAGS: readonly string[] = ONE_SHOT_V8_FLAGS;
/** What `DAEMON_START_V8_FLAGS` turned off, turned back on. */
export const DAEMON_RUNNING_V8_FLAGS: readonly string[] = DAEMON_START_V8_FLAGS.map((f) =>
  f.replace(/^--no-/, '--'),
);

/**
 * Turns the optimizer off for the daemon's start (see DAEMON_START_V8_FLAGS) and answers what
 * turns it on again (once; later calls do nothing). Null when the flags were not set: whoever
 * starts node with optimizer flags of their own keeps them.
 */
export function deferOptimizer(
  given: boolean,
  set: (flag: string) => void = setFlagsFromString,
): (() => string[]) | null {
  if (given) return null;
  for (const flag of DAEMON_START_V8_FLAGS) set(flag);
  let on = false;
  return () => {
    if (on) return [];
    on = true;
    for (const flag of DAEMON_RUNNING_V8_FLAGS) set(flag);
    return [...DAEMON_RUNNING_V8_FLAGS];
  };
}
