/**
 * The daemon's logger: pino JSON when stderr is not a terminal (journald, Kubernetes), one
 * readable line per record on a terminal. Every record about an object carries it as a field
 * (`repository`, `policy`, `automation`, `receiver`), and the readable form puts it up front.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { LogLevel, Logger, Redactor } from '../util/index.js';

const LEVEL_NAMES: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO ',
  40: 'WARN ',
  50: 'ERROR',
  60: 'FATAL',
};
const OBJECT_KEYS = ['automation', 'repository', 'policy', 'receiver', 'job'] as const;

/** One JSON record → `12:00:01 INFO  automation=ns/name message key=value …`. */
export function readableLine(json: string): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const { level, time, msg, ...rest } = rec;
  const when = typeof time === 'number' ? new Date(time).toISOString().slice(11, 19) : '';
  const head = [when, LEVEL_NAMES[Number(level)] ?? String(level)];
  for (const k of OBJECT_KEYS) if (k in rest) head.push(`${k}=${String(rest[k])}`);
  head.push(String(msg ?? ''));
  const others = Object.entries(rest).filter(([k]) => !(OBJECT_KEYS as readonly string[]).includes(k));
  const tail = others.map(
    ([k, v]) => `${k}=${typeof v === 'string' ? (/\s/.test(v) ? JSON.stringify(v) : v) : JSON.stringify(v)}`,
  );
  return [...head, ...tail].join(' ');
}

export function readableStream(out: NodeJS.WritableStream): Writable {
  let pending = '';
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      pending += chunk.toString('utf8');
      let nl: number;
      while ((nl = pending.indexOf('\n')) >= 0) {
        out.write(readableLine(pending.slice(0, nl)) + '\n');
        pending = pending.slice(nl + 1);
      }
      done();
    },
  });
}

export interface ServeLoggerOptions {
  level: LogLevel;
  /** Readable lines instead of JSON; default: whether stderr is a terminal. */
  pretty?: boolean;
  fd?: number;
  /** Scrubs the secrets it is told (the store's password) from every line. */
  redactor?: Redactor;
}

export function createServeLogger(opts: ServeLoggerOptions): Logger {
  const fd = opts.fd ?? 2;
  const pretty = opts.pretty ?? (fd === 2 ? process.stderr.isTTY : process.stdout.isTTY) === true;
  const base = {
    level: opts.level,
    base: undefined,
    redact: {
      paths: ['password', 'token', 'authorization', 'headers.authorization', '*.password', '*.token'],
      censor: '[redacted]',
    },
    ...(opts.redactor ? { hooks: { streamWrite: (line: string) => opts.redactor!.text(line) } } : {}),
  };
  if (pretty) return pino(base, readableStream(fd === 2 ? process.stderr : process.stdout));
  return pino(base, pino.destination({ fd, sync: true }));
}
