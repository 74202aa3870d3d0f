import { pino, type Logger, type Level } from 'pino';
import type { Redactor } from './redact.js';

export type { Logger };
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Logs go to stderr so that `--json` output on stdout stays machine-readable.
 * Redaction is a second line of defence: credentials should never be handed to the logger at all.
 * A `redactor` scrubs the secrets it is told (e.g. the store's password) from every line written.
 */
export function createLogger(
  level: LogLevel = 'warn',
  destination: number = 2,
  redactor?: Redactor,
  opts: { text?: boolean } = {},
): Logger {
  const write = (line: string): string => {
    const shown = opts.text ? textLine(line) : line;
    return redactor ? redactor.text(shown) : shown;
  };
  return pino(
    {
      level: level as Level | 'silent',
      base: undefined,
      ...(redactor || opts.text ? { hooks: { streamWrite: write } } : {}),
      redact: {
        paths: [
          'password',
          'token',
          'authorization',
          'headers.authorization',
          '*.password',
          '*.token',
          '*.authorization',
        ],
        censor: '[redacted]',
      },
    },
    pino.destination({ fd: destination, sync: true }),
  );
}

/** A logger that drops everything; for library calls and tests. */
export const silentLogger: Logger = pino({ level: 'silent' });

const LEVEL_WORDS: Record<number, string> = {
  60: 'fatal',
  50: 'error',
  40: 'warning',
  30: 'info',
  20: 'debug',
  10: 'trace',
};

/**
 * A JSON log line as a person reads it on a terminal, the way errors are printed:
 * `pawl: warning: MESSAGE (key=value …)`. A line that is not a JSON object is left as it is.
 */
export function textLine(line: string): string {
  let rec: unknown;
  try {
    rec = JSON.parse(line);
  } catch {
    return line;
  }
  if (rec === null || typeof rec !== 'object' || Array.isArray(rec)) return line;
  const { level, time, msg, ...rest } = rec as Record<string, unknown>;
  void time;
  const word = typeof level === 'number' ? (LEVEL_WORDS[level] ?? String(level)) : String(level);
  const extra = Object.entries(rest).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  return `pawl: ${word}: ${typeof msg === 'string' ? msg : ''}${extra.length ? ` (${extra.join(', ')})` : ''}\n`;
}
