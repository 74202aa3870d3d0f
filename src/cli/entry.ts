/**
 * The CLI as a function of argv: what the built bundle (dist/cli/pawl.cjs, scripts/build.ts)
 * exports to its launcher (src/cli/launch.ts), and what src/cli/main.ts runs from the sources.
 * No top-level await here or below: the bundle is CommonJS, compiled through a code cache.
 */
import { CommanderError } from 'commander';
import { buildProgram } from './program.js';

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
