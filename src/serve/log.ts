/**
 * The daemon's logger: pino JSON when stderr is not a terminal (journald, Kubernetes), one
 * readable line per record on a terminal. Every record about an object carries it as a field
 * (`repository`, `policy`, `automation`, `receiver`), and the readable form puts it up front.
 */
import { writeSync } from 'node:fs';
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

/**
 * The daemon's JSON records, written together instead of one `write` each. A pass logs a record
 * per scan and per policy; each written at once is a system call and a wake-up of whatever reads
 * the log (journald, the container runtime), and a pipe that reader has let fill stalls the
 * daemon (pino's synchronous destination sleeps 100 ms and tries again). Here lines are gathered
 * and written at most `delayMs` after the first of them, or once `maxBytes` are waiting; a full
 * pipe keeps them for the next try, the event loop going on.
 *
 * Nothing is lost on a stop: the buffer is written synchronously on the process's `exit` (which
 * `pawl serve` reaches on SIGTERM, SIGINT, a second signal and a fatal error), waiting for a
 * full pipe if it must. Until `buffer()` is called every line is written at once, as before: the
 * daemon's start, when a signal still has node's default action (the process ends without an
 * `exit`), loses nothing either.
 */
export class LogOutput {
  readonly #fd: number;
  readonly #delayMs: number;
  readonly #maxBytes: number;
  #pending: string[] = [];
  #bytes = 0;
  #timer: NodeJS.Timeout | null = null;
  #buffering = false;
  readonly #onExit = () => this.flushSync();

  constructor(fd: number, opts: { delayMs?: number; maxBytes?: number } = {}) {
    this.#fd = fd;
    this.#delayMs = opts.delayMs ?? 10;
    this.#maxBytes = opts.maxBytes ?? 64 * 1024;
  }

  /** From now on lines are gathered (see the class); written synchronously on exit. */
  buffer(): void {
    if (this.#buffering) return;
    this.#buffering = true;
    process.on('exit', this.#onExit);
  }

  /** Lines not written yet (tests). */
  get pending(): number {
    return this.#pending.length;
  }

  /** pino's destination: one record, `\n`-terminated. */
  write(line: string): boolean {
    this.#pending.push(line);
    this.#bytes += line.length;
    if (!this.#buffering || this.#bytes >= this.#maxBytes) this.#flush(this.#buffering);
    else this.#timer ??= setTimeout(() => this.#flush(true), this.#delayMs).unref();
    return true;
  }

  /** Everything gathered, written now; waits for a full pipe (the process is exiting). */
  flushSync(): void {
    this.#flush(false);
  }

  #flush(mayWait: boolean): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    if (this.#pending.length === 0) return;
    let buf = Buffer.from(this.#pending.join(''), 'utf8');
    this.#pending = [];
    this.#bytes = 0;
    while (buf.length > 0) {
      try {
        buf = buf.subarray(writeSync(this.#fd, buf));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') {
          // Nowhere left to say it: a closed stderr (EPIPE) drops the records, as pino's does.
          if ((err as NodeJS.ErrnoException).code === 'EPIPE') return;
          throw err;
        }
        if (mayWait) {
          // The reader is behind: keep the rest for the next try instead of stalling the loop.
          this.#pending = [buf.toString('utf8')];
          this.#bytes = buf.length;
          this.#timer = setTimeout(() => this.#flush(true), this.#delayMs).unref();
          return;
        }
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
      }
    }
  }
}

export interface ServeLoggerOptions {
  level: LogLevel;
  /** Readable lines instead of JSON; default: whether stderr is a terminal. */
  pretty?: boolean;
  fd?: number;
  /** Scrubs the secrets it is told (the store's password) from every line. */
  redactor?: Redactor;
  /** Where JSON records go (the CLI's, to buffer them once it handles signals); default: `fd`, each at once. */
  output?: LogOutput;
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
  return pino(base, opts.output ?? new LogOutput(fd));
}
