import { delimiter, resolve } from 'node:path';
import { Command, Option } from 'commander';
import { LOG_LEVELS, Redactor, createLogger, type LogLevel, type Logger } from '../util/index.js';

/** Options every command takes (SPEC §5). */
export interface GlobalOptions {
  /** `-c` paths; without any, those of env `PAWL_CONFIG` (several joined by `:`, as in PATH). */
  config: string[];
  /**
   * Absolute: resolved once here, because git runs in other directories and is handed files
   * in the state directory (askpass script, CA bundle, SSH key and known_hosts).
   */
  stateDir: string;
  logLevel: LogLevel;
  json: boolean;
  /** Any configuration error stops the command (exit 2), as before objects could be skipped. */
  strict: boolean;
  /** Secrets laid out as Kubernetes mounts them: DIR/NAMESPACE/NAME/KEY (env PAWL_SECRETS_DIR). */
  secretsDir?: string;
  /** `--store` (or env PAWL_STORE): a SQLite file or a postgres:// URL; default STATE_DIR/pawl.db (docs/store.md). */
  store?: { value: string; from: '--store' | 'PAWL_STORE' };
  /** `--store-password-file`: the PostgreSQL password (else env PAWL_STORE_PASSWORD). */
  storePasswordFile?: string;
  /**
   * The global options given on the command line, as words: the commands this one offers for
   * copying repeat them, so that they act on the same configuration and state. Those taken from
   * the environment are not repeated (the same shell has them).
   */
  given?: string[];
}

export interface CommandContext {
  options: GlobalOptions;
  log: Logger;
  /** Machine output (`--json`) and the tables for people both go here. */
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  /** Secrets met while running (the store's password): scrubbed from logs and error messages. */
  redactor: Redactor;
}

/** Adds the global options to a (sub)command, so they may be given after the command name too. */
export function withGlobalOptions(cmd: Command): Command {
  return cmd
    .option(
      '-c, --config <path>',
      'configuration file or directory (repeatable; env PAWL_CONFIG)',
      collect,
      [] as string[],
    )
    .option('--state-dir <dir>', 'state directory (env PAWL_STATE_DIR)')
    .addOption(new Option('--log-level <level>', 'log level').choices([...LOG_LEVELS]))
    .option('--json', 'machine-readable output on stdout; logs on stderr')
    .option('--strict', 'any invalid object stops the command (exit 2) instead of being skipped')
    .option(
      '--secrets-dir <dir>',
      'Secrets as Kubernetes mounts them: DIR/NAMESPACE/NAME/KEY (env PAWL_SECRETS_DIR)',
    )
    .option('--store <file|url>', 'state store: a SQLite file or postgres://USER@HOST/DB (env PAWL_STORE)')
    .option(
      '--store-password-file <file>',
      "the PostgreSQL store's password (env PAWL_STORE_PASSWORD; never in --store)",
    );
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/**
 * Reads the options of a command and its parents. Global options may stand before or after
 * the command name; `-c` values from both places add up.
 */
export function contextFrom(cmd: Command): CommandContext {
  type Raw = {
    config?: string[];
    stateDir?: string;
    logLevel?: LogLevel;
    json?: boolean;
    strict?: boolean;
    secretsDir?: string;
    store?: string;
    storePasswordFile?: string;
  };
  const raw: Raw & { config: string[] } = { config: [] };
  const chain: Command[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) chain.unshift(c);
  for (const c of chain) {
    const o = c.opts<Raw>();
    if (o.config) raw.config.push(...o.config);
    if (o.stateDir !== undefined) raw.stateDir = o.stateDir;
    if (o.logLevel !== undefined) raw.logLevel = o.logLevel;
    if (o.json) raw.json = true;
    if (o.strict) raw.strict = true;
    if (o.secretsDir !== undefined) raw.secretsDir = o.secretsDir;
    if (o.store !== undefined) raw.store = o.store;
    if (o.storePasswordFile !== undefined) raw.storePasswordFile = o.storePasswordFile;
  }
  const given: string[] = [
    ...raw.config.flatMap((c) => ['-c', c]),
    ...(raw.stateDir !== undefined ? ['--state-dir', raw.stateDir] : []),
    ...(raw.secretsDir !== undefined ? ['--secrets-dir', raw.secretsDir] : []),
    ...(raw.store !== undefined ? ['--store', raw.store] : []),
    ...(raw.storePasswordFile !== undefined ? ['--store-password-file', raw.storePasswordFile] : []),
  ];
  const options: GlobalOptions = {
    // The flag wins over the environment, which wins over nothing (commands then say what to give).
    config: raw.config.length > 0 ? raw.config : configFromEnv(process.env.PAWL_CONFIG),
    stateDir: resolve(raw.stateDir ?? (process.env.PAWL_STATE_DIR || './.pawl')),
    logLevel: raw.logLevel ?? (process.env.PAWL_LOG_LEVEL as LogLevel | undefined) ?? 'warn',
    json: raw.json === true,
    strict: raw.strict === true,
    given,
  };
  const secretsDir = raw.secretsDir ?? process.env.PAWL_SECRETS_DIR;
  if (secretsDir) options.secretsDir = secretsDir;
  if (raw.store !== undefined) options.store = { value: raw.store, from: '--store' };
  else if (process.env.PAWL_STORE) options.store = { value: process.env.PAWL_STORE, from: 'PAWL_STORE' };
  if (raw.storePasswordFile !== undefined) options.storePasswordFile = raw.storePasswordFile;
  const redactor = new Redactor();
  return {
    options,
    // On a terminal, warnings read like the errors beside them; JSON lines for --json and pipes.
    log: createLogger(options.logLevel, 2, redactor, {
      text: !options.json && process.stderr.isTTY === true,
    }),
    stdout: process.stdout,
    stderr: process.stderr,
    redactor,
  };
}

/**
 * The global options the daemon's offered commands carry: every one that decides what it reads
 * and writes, from a flag or the environment, with absolute paths — they are run beside the
 * daemon (`kubectl exec`, another shell on its host), not in the directory it was started from.
 */
export function daemonGlobals(o: GlobalOptions, cwd = process.cwd()): string[] {
  const abs = (p: string) => resolve(cwd, p);
  const store = o.store?.value;
  return [
    ...o.config.flatMap((c) => ['-c', abs(c)]),
    '--state-dir',
    o.stateDir,
    ...(o.secretsDir ? ['--secrets-dir', abs(o.secretsDir)] : []),
    ...(store ? ['--store', /^postgres(ql)?:\/\//.test(store) ? withoutPassword(store) : abs(store)] : []),
    ...(o.storePasswordFile ? ['--store-password-file', abs(o.storePasswordFile)] : []),
  ];
}

/** A printed command never holds the store's password (it comes from the file or the environment). */
function withoutPassword(url: string): string {
  try {
    const u = new URL(url);
    u.password = '';
    return u.toString();
  } catch {
    return url;
  }
}

/** `PAWL_CONFIG`: one path, or several joined by the path delimiter (`:`), empty parts ignored. */
export function configFromEnv(value: string | undefined): string[] {
  return (value ?? '').split(delimiter).filter((p) => p !== '');
}

/** A command's action: resolves to the exit code; throws PawlError for 1/2 with a message. */
export type Action = (ctx: CommandContext, ...args: never[]) => Promise<number>;

export function writeJson(ctx: CommandContext, value: unknown): void {
  ctx.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

export function writeLine(ctx: CommandContext, line = ''): void {
  ctx.stdout.write(line + '\n');
}
