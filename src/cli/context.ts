import { resolve } from 'node:path';
import { Command, Option } from 'commander';
import { LOG_LEVELS, createLogger, type LogLevel, type Logger } from '../util/index.js';

/** Options every command takes (SPEC §5). */
export interface GlobalOptions {
  config: string[];
  /**
   * Absolute: resolved once here, because git runs in other directories and is handed files
   * in the state directory (askpass script, CA bundle, SSH key and known_hosts).
   */
  stateDir: string;
  logLevel: LogLevel;
  json: boolean;
}

export interface CommandContext {
  options: GlobalOptions;
  log: Logger;
  /** Machine output (`--json`) and the tables for people both go here. */
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

/** Adds the global options to a (sub)command, so they may be given after the command name too. */
export function withGlobalOptions(cmd: Command): Command {
  return cmd
    .option('-c, --config <path>', 'configuration file or directory (repeatable)', collect, [] as string[])
    .option('--state-dir <dir>', 'state directory (env PAWL_STATE_DIR)')
    .addOption(new Option('--log-level <level>', 'log level').choices([...LOG_LEVELS]))
    .option('--json', 'machine-readable output on stdout; logs on stderr');
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/**
 * Reads the options of a command and its parents. Global options may stand before or after
 * the command name; `-c` values from both places add up.
 */
export function contextFrom(cmd: Command): CommandContext {
  const raw: { config: string[]; stateDir?: string; logLevel?: LogLevel; json?: boolean } = { config: [] };
  const chain: Command[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) chain.unshift(c);
  for (const c of chain) {
    const o = c.opts() as { config?: string[]; stateDir?: string; logLevel?: LogLevel; json?: boolean };
    if (o.config) raw.config.push(...o.config);
    if (o.stateDir !== undefined) raw.stateDir = o.stateDir;
    if (o.logLevel !== undefined) raw.logLevel = o.logLevel;
    if (o.json) raw.json = true;
  }
  const options: GlobalOptions = {
    config: raw.config,
    stateDir: resolve(raw.stateDir ?? (process.env.PAWL_STATE_DIR || './.pawl')),
    logLevel: raw.logLevel ?? (process.env.PAWL_LOG_LEVEL as LogLevel | undefined) ?? 'warn',
    json: raw.json === true,
  };
  return { options, log: createLogger(options.logLevel), stdout: process.stdout, stderr: process.stderr };
}

/** A command's action: resolves to the exit code; throws PawlError for 1/2 with a message. */
export type Action = (ctx: CommandContext, ...args: never[]) => Promise<number>;

export function writeJson(ctx: CommandContext, value: unknown): void {
  ctx.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

export function writeLine(ctx: CommandContext, line = ''): void {
  ctx.stdout.write(line + '\n');
}
