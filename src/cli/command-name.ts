/**
 * The commands' names and how argv names one, with no imports: the launcher of the built CLI
 * (src/cli/launch.ts) needs the command before it compiles the bundle, to set the V8 flags the
 * command runs with first (a code cache is only accepted under the flags it was made with).
 */
export const COMMAND_NAMES = [
  'validate',
  'policy',
  'setters',
  'scan',
  'tags',
  'run',
  'explain',
  'rollback',
  'release',
  'serve',
  'notify',
  'get',
  'reconcile',
  'suspend',
  'resume',
  'completion',
] as const;
export type CommandName = (typeof COMMAND_NAMES)[number];

const NAMES: ReadonlySet<string> = new Set(COMMAND_NAMES);

/** Global options that take a value, so their values are not taken for the command name. */
const VALUE_OPTIONS = new Set([
  '-c',
  '--config',
  '--state-dir',
  '--log-level',
  '--secrets-dir',
  '--store',
  '--store-password-file',
]);

/**
 * The command named in argv (`help NAME` names NAME), or null when there is none (help,
 * version, a typo).
 */
export function commandName(argv: readonly string[]): CommandName | null {
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
    return NAMES.has(a) ? (a as CommandName) : null;
  }
  return null;
}
