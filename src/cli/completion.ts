/**
 * Shell completion scripts, generated from the program's own command tree (every module
 * registered): a command, option or argument choice added anywhere appears in the scripts with
 * nothing else to update. The scripts are static text; none calls pawl while completing.
 */
import type { Command } from 'commander';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

export interface CompletionOption {
  /** `-c`, `--config`. */
  flags: string[];
  takesValue: boolean;
  description: string;
}

export interface CompletionCommand {
  name: string;
  description: string;
  options: CompletionOption[];
  /** The choices of its first argument (`get repositories|policies|…`). */
  words: string[];
  subcommands: CompletionCommand[];
}

/** The part of a commander tree the scripts need. */
export function completionTree(cmd: Command): CompletionCommand {
  return {
    name: cmd.name(),
    description: cmd.description(),
    options: cmd.options
      .filter((o) => !o.hidden)
      .map((o) => ({
        flags: [o.short, o.long].filter((f): f is string => f !== undefined),
        takesValue: o.required || o.optional,
        description: o.description,
      })),
    words: [...(cmd.registeredArguments[0]?.argChoices ?? [])],
    subcommands: cmd.commands.map(completionTree),
  };
}

export function completionScript(shell: Shell, root: CompletionCommand): string {
  if (shell === 'bash') return bash(root);
  if (shell === 'zsh') return zsh(root);
  return fish(root);
}

/** Every option, anywhere in the tree, that takes a value: the word after it is no command. */
function valueFlags(root: CompletionCommand): string[] {
  const all = new Set<string>();
  const walk = (c: CompletionCommand) => {
    for (const o of c.options) if (o.takesValue) for (const f of o.flags) all.add(f);
    c.subcommands.forEach(walk);
  };
  walk(root);
  return [...all].sort();
}

/** What may follow `cmd`: its subcommands and its argument's choices (first), and its options. */
function wordsOf(cmd: CompletionCommand, first: boolean): string[] {
  const longs = cmd.options.flatMap((o) => o.flags.filter((f) => f.startsWith('--')));
  return [...new Set([...(first ? [...cmd.subcommands.map((s) => s.name), ...cmd.words] : []), ...longs])];
}

/** Single quotes for the shells: the text as is, `'` closed, escaped and reopened. */
function sq(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/** One case arm per `COMMAND:SUBCOMMAND` typed so far (`COMMAND:*`: past its first argument). */
function caseArms(root: CompletionCommand, arm: (key: string, words: string[]) => string): string[] {
  const arms: string[] = [];
  for (const c of root.subcommands) {
    for (const s of c.subcommands) arms.push(arm(`${c.name}:${s.name}`, wordsOf(s, false)));
    arms.push(arm(`${c.name}:`, wordsOf(c, true)));
    if (c.subcommands.length === 0) arms.push(arm(`${c.name}:*`, wordsOf(c, false)));
  }
  return arms;
}

/**
 * The loop of the bash and zsh scripts that finds the command and subcommand typed before the
 * cursor (`cmd`, `sub`), passing over flags and the word after a flag that takes a value.
 */
function commandScan(values: string, loop: string, word: string): string {
  return `  for ((${loop})); do
    w="${word}"
    case "$w" in
      ${values}) ((i++)) ;;
      -*) ;;
      *) if [[ -z "$cmd" ]]; then cmd="$w"; elif [[ -z "$sub" ]]; then sub="$w"; fi ;;
    esac
  done`;
}

function bash(root: CompletionCommand): string {
  const commands = root.subcommands.map((c) => c.name).join(' ');
  const values = valueFlags(root).join('|');
  const arms = caseArms(
    root,
    (key, words) => `    ${casePattern(key)}) words=${sq(words.join(' '))} ;;`,
  ).join('\n');
  return `# pawl completion for bash: source <(pawl completion bash)
_pawl() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}"
  local cmd="" sub="" i w words
  case "$prev" in
    ${values}) COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
${commandScan(values, 'i = 1; i < COMP_CWORD; i++', '${COMP_WORDS[i]}')}
  if [[ -z "$cmd" ]]; then
    words=${sq(`${commands} ${wordsOf(root, false).join(' ')}`)}
  else
    case "$cmd:$sub" in
${arms}
      *) words="" ;;
    esac
  fi
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -F _pawl pawl
`;
}

function zsh(root: CompletionCommand): string {
  const values = valueFlags(root).join('|');
  const described = root.subcommands
    .map((c) => `    ${sq(`${c.name}:${c.description.replaceAll(':', '\\:')}`)}`)
    .join('\n');
  const arms = caseArms(
    root,
    (key, words) => `    (${casePattern(key)}) words_=(${words.join(' ')}) ;;`,
  ).join('\n');
  return `#compdef pawl
# pawl completion for zsh: source <(pawl completion zsh), or save as _pawl in a directory of $fpath
_pawl() {
  local cmd="" sub="" i w
  local -a words_ commands
  commands=(
${described}
  )
  case "\${words[CURRENT-1]}" in
    ${values}) _files; return ;;
  esac
${commandScan(values, 'i = 2; i < CURRENT; i++', '${words[i]}')}
  if [[ -z "$cmd" ]]; then
    _describe 'command' commands
    return
  fi
  case "$cmd:$sub" in
${arms}
  esac
  compadd -- "\${words_[@]}"
}
compdef _pawl pawl
`;
}

/** A case pattern: quoted, but a trailing `*` stays a wildcard. */
function casePattern(key: string): string {
  return key.endsWith(':*') ? `${sq(key.slice(0, -1))}*` : sq(key);
}

function fish(root: CompletionCommand): string {
  const lines = ['# pawl completion for fish: pawl completion fish | source', 'complete -c pawl -f'];
  const option = (o: CompletionOption, condition: string | null) => {
    const parts = ['complete -c pawl'];
    if (condition) parts.push(`-n ${sq(condition)}`);
    for (const f of o.flags) parts.push(f.startsWith('--') ? `-l ${f.slice(2)}` : `-s ${f.slice(1)}`);
    if (o.takesValue) parts.push('-r -F');
    parts.push(`-d ${sq(o.description)}`);
    return parts.join(' ');
  };
  for (const o of root.options) lines.push(option(o, null));
  for (const c of root.subcommands) {
    lines.push(`complete -c pawl -n '__fish_use_subcommand' -a ${c.name} -d ${sq(c.description)}`);
    const inCmd = `__fish_seen_subcommand_from ${c.name}`;
    const subs = c.subcommands.map((s) => s.name).join(' ');
    for (const s of c.subcommands) {
      lines.push(
        `complete -c pawl -n ${sq(`${inCmd}; and not __fish_seen_subcommand_from ${subs}`)} -a ${s.name} -d ${sq(s.description)}`,
      );
      for (const o of s.options) lines.push(option(o, `${inCmd}; and __fish_seen_subcommand_from ${s.name}`));
    }
    if (c.words.length > 0) lines.push(`complete -c pawl -n ${sq(inCmd)} -a ${sq(c.words.join(' '))}`);
    for (const o of c.options) lines.push(option(o, inCmd));
  }
  return lines.join('\n') + '\n';
}
