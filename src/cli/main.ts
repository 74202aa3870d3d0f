import { setFlagsFromString } from 'node:v8';
import { main } from './entry.js';
import { startFlags } from './start-flags.js';

export { main } from './entry.js';
export { buildProgram, commandName, COMMAND_SUMMARIES, SHORT_USAGE } from './program.js';

/**
 * Run from the sources (tsx; bin/pawl.js in a checkout): the V8 flags the command starts with
 * (src/cli/start-flags.ts: a small young generation and no TurboFan for one-shot commands), then
 * the command. The built CLI does the same in src/cli/launch.ts, before it compiles the bundle.
 */
const invokedDirectly =
  process.argv[1] !== undefined && /(?:^|[\\/])(?:main\.(?:ts|js)|pawl(?:\.js)?)$/.test(process.argv[1]);
if (invokedDirectly) {
  const argv = process.argv.slice(2);
  for (const flag of startFlags(argv, process.execArgv, process.env.NODE_OPTIONS)) setFlagsFromString(flag);
  const code = await main(argv);
  process.exitCode = code;
}
