/**
 * The commands pawl offers for copying (`explain`'s advice, the dashboard's buttons): each one
 * must run as printed, so it carries the global options that reach the same configuration and
 * state (`-c`, `--state-dir`, …) and quotes what a shell would split.
 */

/** `word` as a POSIX shell reads it back: bare when safe, else in single quotes. */
export function shellQuote(word: string): string {
  if (/^[\w@%+=:,./-]+$/.test(word)) return word;
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** Spells `pawl VERB ARGS…` followed by the global options that make it act where it was offered. */
export type CommandSpeller = (args: readonly string[], placeholders?: { reason?: boolean }) => string;

/**
 * `globals` come already split into words (`['-c', '/etc/pawl/config', …]`). A `--reason`
 * placeholder is `"…"`: it runs as printed, and says where the person's words go.
 */
export function commandSpeller(globals: readonly string[], program = 'pawl'): CommandSpeller {
  return (args, placeholders = {}) =>
    [
      program,
      ...args.map(shellQuote),
      ...(placeholders.reason ? ['--reason', '"…"'] : []),
      ...globals.map(shellQuote),
    ].join(' ');
}

/** Without any options: the commands as the documentation prints them. */
export const plainCommand: CommandSpeller = commandSpeller([]);
