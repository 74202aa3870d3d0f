import type { Command } from 'commander';
import { PawlError, errorMessage } from '../util/index.js';
import { contextFrom, type CommandContext } from './context.js';

/**
 * Wraps a command body: builds the context, maps errors to exit codes (SPEC §5),
 * and prints errors for people on stderr, or as `{"error": …}` on stdout with `--json`.
 */
export function action<A extends unknown[]>(
  body: (ctx: CommandContext, ...args: A) => Promise<number>,
): (...args: unknown[]) => Promise<void> {
  return async (...args: unknown[]) => {
    const cmd = args[args.length - 1] as Command;
    const positional = args.slice(0, -2) as unknown as A;
    const ctx = contextFrom(cmd);
    try {
      process.exitCode = await body(ctx, ...positional);
    } catch (err) {
      process.exitCode = reportError(ctx, err);
    }
  };
}

export function reportError(ctx: CommandContext, err: unknown): number {
  const code = err instanceof PawlError ? err.exitCode : 1;
  const message = ctx.redactor.text(errorMessage(err));
  if (ctx.options.json) {
    ctx.stdout.write(JSON.stringify({ error: message, exitCode: code }, null, 2) + '\n');
  }
  ctx.stderr.write(`pawl: ${message}\n`);
  if (!(err instanceof PawlError) && err instanceof Error && ctx.options.logLevel === 'debug') {
    ctx.stderr.write(`${ctx.redactor.text(err.stack ?? '')}\n`);
  }
  return code;
}
