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
export function createLogger(level: LogLevel = 'warn', destination: number = 2, redactor?: Redactor): Logger {
  return pino(
    {
      level: level as Level | 'silent',
      base: undefined,
      ...(redactor ? { hooks: { streamWrite: (line: string) => redactor.text(line) } } : {}),
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
