/**
 * The V8 flags a command starts with, decided from argv alone. The built CLI's launcher
 * (src/cli/launch.ts) sets them before it compiles the bundle, because V8 accepts a code cache
 * only under the flags it was made with, and the cache is made after the command's work, when
 * these flags are set. The sources (src/cli/main.ts) set the same ones; the daemon's own
 * src/cli/commands/serve.ts sets them again (the same values, so V8's flag hash is unchanged).
 */
import { commandName } from './command-name.js';
// heap.ts alone, not util/index.ts: the launcher compiles this without a code cache, and the
// index would bring the logger and pino with it.
// eslint-disable-next-line @typescript-eslint/no-restricted-imports
import {
  DAEMON_START_V8_FLAGS,
  HEAP_MODES,
  ONE_SHOT_HEAP_FLAGS,
  ONE_SHOT_V8_FLAGS,
  SMALL_HEAP_FLAGS,
  heapFlagsGiven,
  optimizerFlagsGiven,
  type HeapMode,
} from '../util/heap.js';

/** `pawl serve --heap MODE` (commander's default `small`); an unknown mode is commander's error to give. */
function serveHeapMode(argv: readonly string[]): HeapMode {
  let mode: string = 'small';
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--heap' && i + 1 < argv.length) mode = argv[++i]!;
    else if (a.startsWith('--heap=')) mode = a.slice('--heap='.length);
  }
  return (HEAP_MODES as readonly string[]).includes(mode) ? (mode as HeapMode) : 'small';
}

/**
 * One-shot commands: a small young generation and no TurboFan (src/util/heap.ts). The daemon:
 * what `pawl serve` sets at its start (tuneHeap for its `--heap` mode, deferOptimizer). Whoever
 * starts node with heap or optimizer flags of their own keeps them.
 */
export function startFlags(argv: readonly string[], execArgv: readonly string[], nodeOptions = ''): string[] {
  const serve = commandName(argv) === 'serve';
  const flags: string[] = [];
  if (!heapFlagsGiven(execArgv, nodeOptions))
    flags.push(...(serve ? (serveHeapMode(argv) === 'small' ? SMALL_HEAP_FLAGS : []) : ONE_SHOT_HEAP_FLAGS));
  if (!optimizerFlagsGiven(execArgv, nodeOptions))
    flags.push(...(serve ? DAEMON_START_V8_FLAGS : ONE_SHOT_V8_FLAGS));
  return flags;
}
