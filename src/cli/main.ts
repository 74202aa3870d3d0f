import { Command, CommanderError } from 'commander';
import { withGlobalOptions } from './context.js';

type CommandModule = { register(program: Command): void };

/**
 * Each command's module, loaded only when needed: `pawl validate` should not pay for the
 * registry client, SQLite and the git layer. `--help` and unknown commands load them all.
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
};

/** Global options that take a value, so their values are not taken for the command name. */
const VALUE_OPTIONS = new Set(['-c', '--config', '--state-dir', '--log-level']);

/** The command named in argv, or null when there is none (help, version, a typo). */
export function commandName(argv: readonly string[]): string | null {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (VALUE_OPTIONS.has(a)) {
      i++;
      continue;
    }
    if (a.startsWith('-')) continue;
    return Object.hasOwn(COMMANDS, a) ? a : null;
  }
  return null;
}

export async function buildProgram(argv: readonly string[] = []): Promise<Command> {
  const program = withGlobalOptions(new Command('pawl'))
    .description(
      'Image update automation for GitOps that never moves an image backwards unless a person asks it to.',
    )
    .version('0.1.0')
    .showHelpAfterError()
    .exitOverride();
  const name = commandName(argv);
  const loaders = name ? [COMMANDS[name]!] : [...new Set(Object.values(COMMANDS))];
  const modules = await Promise.all([...new Set(loaders)].map((load) => load()));
  for (const mod of new Set(modules)) mod.register(program);
  return program;
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
  const code = await main(process.argv.slice(2));
  process.exitCode = code;
}
