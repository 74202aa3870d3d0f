/**
 * What a person at a terminal gets beyond the plain text: a one-line progress counter on stderr
 * and a little colour on stdout. Neither ever reaches a pipe, a file or `--json`; colour also
 * stays off with NO_COLOR (https://no-color.org) or TERM=dumb.
 */
import type { CommandContext } from './context.js';

export interface StatusLine {
  show(text: string): void;
  done(): void;
}

const isTty = (s: NodeJS.WritableStream): boolean => (s as NodeJS.WriteStream).isTTY === true;

/** One line on stderr, redrawn in place; nothing at all when stderr is not a terminal. */
export function statusLine(ctx: CommandContext): StatusLine {
  if (!isTty(ctx.stderr) || ctx.options.json) return { show: () => undefined, done: () => undefined };
  let shown = false;
  return {
    show(text) {
      ctx.stderr.write(`\r\x1b[2K${text}`);
      shown = true;
    },
    done() {
      if (shown) ctx.stderr.write('\r\x1b[2K');
      shown = false;
    },
  };
}

export interface Paint {
  good(text: string): string;
  bad(text: string): string;
}

export function colourWanted(
  stream: NodeJS.WritableStream,
  env: NodeJS.ProcessEnv = process.env,
  json = false,
): boolean {
  return isTty(stream) && !json && (env.NO_COLOR ?? '') === '' && env.TERM !== 'dumb';
}

/** Green and red for stdout, or the text unchanged. */
export function paint(ctx: CommandContext, env: NodeJS.ProcessEnv = process.env): Paint {
  if (!colourWanted(ctx.stdout, env, ctx.options.json)) return { good: (t) => t, bad: (t) => t };
  return { good: (t) => `\x1b[32m${t}\x1b[39m`, bad: (t) => `\x1b[31m${t}\x1b[39m` };
}
