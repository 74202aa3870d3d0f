import { Command, CommanderError } from 'commander';
import { withGlobalOptions } from './context.js';
import * as validate from './commands/validate.js';
import * as policy from './commands/policy.js';
import * as setters from './commands/setters.js';
import * as scan from './commands/scan.js';
import * as tags from './commands/tags.js';
import * as run from './commands/run.js';
import * as explain from './commands/explain.js';
import * as rollback from './commands/rollback.js';

export function buildProgram(): Command {
  const program = withGlobalOptions(new Command('pawl'))
    .description('Image update automation for GitOps that never moves an image backwards unless a person asks it to.')
    .version('0.1.0')
    .showHelpAfterError()
    .exitOverride();
  for (const mod of [validate, policy, setters, scan, tags, run, explain, rollback]) mod.register(program);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
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

const invokedDirectly = process.argv[1] !== undefined && /(?:^|[\\/])(?:main\.(?:ts|js)|pawl(?:\.js)?)$/.test(process.argv[1]);
if (invokedDirectly) {
  const code = await main(process.argv.slice(2));
  process.exitCode = code;
}
