import { Argument, type Command } from 'commander';
import { action } from '../action.js';
import { SHELLS, completionScript, completionTree, type Shell } from '../completion.js';

export function register(program: Command): void {
  program
    .command('completion')
    .addArgument(new Argument('<shell>', 'bash, zsh or fish').choices(SHELLS))
    .description('a completion script for bash, zsh or fish, from the command table')
    .addHelpText(
      'after',
      '\nbash: source <(pawl completion bash)   zsh: source <(pawl completion zsh)   fish: pawl completion fish | source',
    )
    .action(
      action(async (ctx, shell: Shell) => {
        // Every module registered: the scripts list exactly what `pawl COMMAND --help` would.
        const { buildProgram } = await import('../program.js');
        ctx.stdout.write(completionScript(shell, completionTree(await buildProgram([], true))));
        return 0;
      }),
    );
}
