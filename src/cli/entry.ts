/**
 * The CLI as a function of argv: what the built bundle (dist/cli/pawl.cjs, scripts/build.ts)
 * exports to its launcher (src/cli/launch.ts), and what src/cli/main.ts runs from the sources.
 * No top-level await here or below: the bundle is CommonJS, compiled through a code cache.
 */
import { CommanderError } from 'commander';
import { buildProgram } from './program.js';

export async function main(argv: string[]): Promise<number> {
  readerMayLeave(process.stdout);
  readerMayLeave(process.stderr);
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

const watched = new WeakSet<NodeJS.WriteStream>();

/**
 * `pawl run --json | head`: the reader closing the pipe ends the output, not the command. Node
 * reports the closed pipe as an `error` event on the stream, and with no listener that is an
 * uncaught exception: a stack trace and exit status 1 after the pass had done its work. The
 * rest of the output is dropped, and the command's own exit status stands. Any other error on
 * the stream is still thrown.
 */
function readerMayLeave(stream: NodeJS.WriteStream): void {
  if (watched.has(stream)) return;
  watched.add(stream);
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
  });
}
