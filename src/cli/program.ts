/**
 * The one command table: which module registers each command, what the help lists, and the
 * program built from them (main.ts runs it; completion.ts walks it).
 */
import { Command, Help } from 'commander';
import { withGlobalOptions } from './context.js';
import { commandName, type CommandName } from './command-name.js';

type CommandModule = { register(program: Command): void };

/**
 * Each command's module, loaded only when needed: `pawl validate` should not pay for the
 * registry client, SQLite and the git layer, nor `pawl run` for the daemon's web server.
 */
const COMMANDS: Record<CommandName, () => Promise<CommandModule>> = {
  validate: () => import('./commands/validate.js'),
  policy: () => import('./commands/policy.js'),
  setters: () => import('./commands/setters.js'),
  scan: () => import('./commands/scan.js'),
  tags: () => import('./commands/tags.js'),
  run: () => import('./commands/run.js'),
  explain: () => import('./commands/explain.js'),
  rollback: () => import('./commands/rollback.js'),
  release: () => import('./commands/rollback.js'),
  serve: () => import('./commands/serve.js'),
  notify: () => import('./commands/notify.js'),
  get: () => import('./commands/get.js'),
  reconcile: () => import('./commands/reconcile.js'),
  suspend: () => import('./commands/suspend.js'),
  resume: () => import('./commands/suspend.js'),
  completion: () => import('./commands/completion.js'),
};

/**
 * What `pawl --help` (and an unknown command) lists for each command, so that listing loads no
 * command module (`serve` alone is a megabyte of web server). test/cli/main.test.ts checks that
 * it prints exactly what the modules' own registrations would.
 */
export const COMMAND_SUMMARIES: readonly (readonly [term: string, description: string])[] = [
  [
    'validate [options]',
    'load and check all configuration objects; report every problem with file:line (exit 2 on errors)',
  ],
  ['policy', 'work with ImagePolicy objects offline'],
  ['setters', 'Flux setter markers (# {"$imagepolicy": "NS:POLICY"})'],
  ['scan [options] [names...]', 'scan ImageRepositories now and store what the registries listed'],
  [
    'tags [options] <name>',
    'the tags of the last good scan; --history: every scan; --raw: what the registry said',
  ],
  ['run [options]', 'one full pass: scan what is due, select, guard, write, commit and push'],
  [
    'explain [options] <policy>',
    'why: ranked candidates and their ordering keys, the high-water mark, every marker and its decision, pins, recent scans',
  ],
  [
    'rollback [options] <policy>',
    "write TAG into the policy's markers on purpose, commit it with trailers; the lines stay pinned until a newer release or `pawl release`",
  ],
  ['release [options] <policy>', "lift the policy's pins: write its current candidate now"],
  [
    'serve [options]',
    'the daemon: every object on its interval, webhook receivers, metrics, health and a JSON API',
  ],
  ['notify', 'work with alert Providers'],
  [
    'get [options] <what>',
    'list repositories, policies, automations or all: ready, last scan or run, message (from the store, or --server)',
  ],
  [
    'reconcile [options] <kind> <name>',
    'ask the running daemon to scan a repository or run an automation now, and wait for the outcome',
  ],
  ['suspend [options] <kind> <name>', "commit spec.suspend: true into the object's file and push it"],
  ['resume [options] <kind> <name>', "commit the removal of the object's spec.suspend and push it"],
  ['completion <shell>', 'a completion script for bash, zsh or fish, from the command table'],
];

export { commandName };

export const SHORT_USAGE = 'usage: pawl <command> [options]   (pawl --help lists the commands)';

function rootProgram(): Command {
  return (
    withGlobalOptions(new Command('pawl'))
      .description(
        'Image update automation for GitOps that never moves an image backwards unless a person asks it to.',
      )
      .version('0.1.0')
      // A mistyped command gets one line of usage (and commander's "did you mean"), not the whole help.
      .showHelpAfterError(SHORT_USAGE)
      .exitOverride()
  );
}

/**
 * The program for argv: the named command's module registered, or, when no command is named,
 * every command as a summary only (help and usage errors need nothing more). `all` registers
 * every module (tests compare the two listings).
 */
export async function buildProgram(argv: readonly string[] = [], all = false): Promise<Command> {
  const program = rootProgram();
  const name = commandName(argv);
  if (name === null && !all) {
    const terms = new Map<string, string>();
    for (const [term, description] of COMMAND_SUMMARIES) {
      const cmdName = term.split(' ')[0]!;
      terms.set(cmdName, term);
      program.command(cmdName).description(description);
    }
    const help = new Help();
    program.configureHelp({ subcommandTerm: (cmd) => terms.get(cmd.name()) ?? help.subcommandTerm(cmd) });
    return program;
  }
  const loaders = name ? [COMMANDS[name]] : Object.values(COMMANDS);
  const modules = await Promise.all([...new Set(loaders)].map((load) => load()));
  for (const mod of new Set(modules)) mod.register(program);
  // A command's own mistakes still show that command's help.
  for (const c of program.commands) c.showHelpAfterError(true);
  return program;
}
