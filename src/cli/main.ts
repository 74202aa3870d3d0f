import { setFlagsFromString } from 'node:v8';
import { CommanderError } from 'commander';
import { buildProgram, commandName } from './program.js';
import {
  ONE_SHOT_HEAP_FLAGS,
  ONE_SHOT_V8_FLAGS,
  heapFlagsGiven,
  optimizerFlagsGiven,
} from '../util/index.js';

export { buildProgram, commandName, COMMAND_SUMMARIES, SHORT_USAGE } from './program.js';

/**
 * A one-shot command keeps V8's young generation at its initial size instead of letting it grow
 * to 16 MB per semi-space: the cold pass peaks about 25 MB lower (docs/performance.md) for the
 * same CPU. The daemon sets its own (`pawl serve --heap`, src/util/heap.ts); anyone who starts
 * node with heap flags of their own keeps them.
 */
function smallYoungGeneration(argv: readonly string[]): void {
  if (commandName(argv) === 'serve' || heapFlagsGiven(process.execArgv, process.env.NODE_OPTIONS)) return;
  for (const flag of ONE_SHOT_HEAP_FLAGS) setFlagsFromString(flag);
}

/** See ONE_SHOT_V8_FLAGS (src/util/heap.ts). */
function noOptimizer(argv: readonly string[]): void {
  if (commandName(argv) === 'serve' || optimizerFlagsGiven(process.execArgv, process.env.NODE_OPTIONS))
    return;
  for (const flag of ONE_SHOT_V8_FLAGS) setFlagsFromString(flag);
}

export async function main(argv: string[]): Promise<number> {
  const program = await buildProgram(argv);
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version are not errors; everything else commander rejects is bad usage.
      if (err.exitCode === 0) return 0;
      return 2;
    }
    throw err;
  }
  return typeof process.exitCode === 'number' ? process.exitCode : 0;
}

const invokedDirectly =
  process.argv[1] !== undefined && /(?:^|[\\/])(?:main\.(?:ts|js)|pawl(?:\.js)?)$/.test(process.argv[1]);
if (invokedDirectly) {
  smallYoungGeneration(process.argv.slice(2));
  noOptimizer(process.argv.slice(2));
  const code = await main(process.argv.slice(2));
  process.exitCode = code;
}
