/**
 * Runs only `pawl policy …` (the same registration main.ts uses), so the command's tests do not
 * depend on every other command loading.
 */
import { Command, CommanderError } from 'commander';
import { withGlobalOptions } from '../../../src/cli/context.js';
import { register } from '../../../src/cli/commands/policy.js';

const program = withGlobalOptions(new Command('pawl')).exitOverride();
register(program);
try {
  await program.parseAsync(process.argv.slice(2), { from: 'user' });
} catch (err) {
  process.exitCode = err instanceof CommanderError && err.exitCode === 0 ? 0 : 2;
}
