import { setFlagsFromString } from 'node:v8';
import { Command, CommanderError, Help } from 'commander';
import { withGlobalOptions } from './context.js';
import {
  ONE_SHOT_HEAP_FLAGS,
  ONE_SHOT_V8_FLAGS,
  heapFlagsGiven,
  optimizerFlagsGiven,
} from '../util/index.js';

type CommandModule = { register(program: Command): void };

/**
 * Each command's module, loaded only when needed: `pawl validate` should not pay for the
 * registry client, SQLite and the git layer, nor `pawl run` for the daemon's web server.
 */
const COMMANDS: Record<string, () => Promise<CommandModule>> = {
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
];

/** Global options that take a value, so their values are not taken for the command name. */
const VALUE_OPTIONS = new Set(['-c', '--config', '--state-dir', '--log-level', '--secrets-dir']);

/**
 * The command named in argv (`help NAME` names NAME), or null when there is none (help,
 * version, a typo).
 */
export function commandName(argv: readonly string[]): string | null {
  let help = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (VALUE_OPTIONS.has(a)) {
      i++;
      continue;
    }
    if (a.startsWith('-')) continue;
    if (a === 'help' && !help) {
      help = true;
      continue;
    }
    return Object.hasOwn(COMMANDS, a) ? a : null;
  }
  return null;
}

function rootProgram(): Command {
  return withGlobalOptions(new Command('pawl'))
    .description(
      'Image update automation for GitOps that never moves an image backwards unless a person asks it to.',
    )
    .version('0.1.0')
    .showHelpAfterError()
    .exitOverride();
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
  const loaders = name ? [COMMANDS[name]!] : Object.values(COMMANDS);
  const modules = await Promise.all([...new Set(loaders)].map((load) => load()));
  for (const mod of new Set(modules)) mod.register(program);
  return program;
}

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
