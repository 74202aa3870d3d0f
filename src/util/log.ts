import { pino, type Logger, type Level } from 'pino';

export type { Logger };
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Logs go to stderr so that `--json` output on stdout stays machine-readable.
 * Redaction is a second line of defence: credentials should never be handed to the logger at all.
 */
export function createLogger(level: LogLevel = 'warn', destination: number = 2): Logger {
  return pino(
    {
      level: level as Level | 'silent',
      base: undefined,
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
