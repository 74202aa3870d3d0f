/**
 * Runs the real `pawl serve` as a child process (`node --import tsx src/cli/main.ts serve …`)
 * on loopback ports, and reads its JSON log lines and admin endpoints.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { freePort } from './registry.js';
import { ROOT } from './world.js';

export interface LogRecord {
  level: number;
  msg: string;
  [key: string]: unknown;
}

export interface ServeProcess {
  child: ChildProcess;
  /** `127.0.0.1:PORT` of the receivers. */
  listen: string;
  admin: string;
  hookUrl(path: string): string;
  records(): LogRecord[];
  output(): string;
  /** Resolves with the first log record (already seen or to come) that matches. */
  waitForLog(pred: (r: LogRecord) => boolean, what: string, timeoutMs?: number): Promise<LogRecord>;
  adminGet<T = unknown>(path: string): Promise<{ status: number; json: T }>;
  metrics(): Promise<string>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

export interface ServeOptions {
  /** `-c`; absent for `--kubernetes`. */
  configDir?: string;
  stateDir: string;
  listenPort?: number;
  args?: string[];
  env?: Record<string, string>;
  /** A built CLI (`dist/cli/main.js`) to run with plain node instead of the sources through tsx. */
  entry?: string;
  /** Flags for node itself, before the entry (e.g. `--cpu-prof`, which NODE_OPTIONS refuses). */
  nodeArgs?: string[];
}

/**
 * Starts `pawl serve` on free ports. A port found free can be taken by another process (an
 * outgoing connection's ephemeral port, under load) before the daemon listens: then it starts
 * again on other ports, as startRegistry does.
 */
export async function startServe(opts: ServeOptions): Promise<ServeProcess> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startServeOnce(opts);
    } catch (err) {
      const taken = err instanceof Error && err.message.includes('EADDRINUSE');
      if (!taken || attempt >= 3) throw err;
    }
  }
}

async function startServeOnce(opts: ServeOptions): Promise<ServeProcess> {
  const port = opts.listenPort ?? (await freePort());
  const adminPort = await freePort();
  const listen = `127.0.0.1:${port}`;
  const admin = `127.0.0.1:${adminPort}`;
  const child = spawn(
    process.execPath,
    [
      ...(opts.nodeArgs ?? []),
      ...(opts.entry ? [opts.entry] : ['--import', 'tsx', join(ROOT, 'src', 'cli', 'main.ts')]),
      'serve',
      ...(opts.configDir !== undefined ? ['-c', opts.configDir] : []),
      '--state-dir',
      opts.stateDir,
      '--listen',
      listen,
      '--admin-listen',
      admin,
      '--start-spread',
      '0s',
      '--log-level',
      'debug',
      ...(opts.args ?? []),
    ],
    { cwd: ROOT, env: { ...process.env, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  live.add(child);
  let out = '';
  let pending = '';
  const records: LogRecord[] = [];
  const watchers = new Set<() => void>();
  const onData = (d: Buffer) => {
    const text = d.toString('utf8');
    out += text;
    pending += text;
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      try {
        records.push(JSON.parse(line) as LogRecord);
      } catch {
        // not a log record (a usage error, a stack)
      }
    }
    for (const w of watchers) w();
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      live.delete(child);
      for (const w of watchers) w();
      resolve({ code, signal });
    }),
  );

  const waitForLog = (pred: (r: LogRecord) => boolean, what: string, timeoutMs = 60_000) =>
    new Promise<LogRecord>((resolve, reject) => {
      const check = () => {
        const hit = records.find(pred);
        if (hit) {
          cleanup();
          resolve(hit);
        } else if (child.exitCode !== null || child.signalCode !== null) {
          cleanup();
          reject(new Error(`pawl serve exited before: ${what}\n${out}`));
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`pawl serve: not within ${timeoutMs} ms: ${what}\n${out.slice(-8000)}`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        watchers.delete(check);
      };
      watchers.add(check);
      check();
    });

  const proc: ServeProcess = {
    child,
    listen,
    admin,
    hookUrl: (path) => `http://${listen}${path}`,
    records: () => records,
    output: () => out,
    waitForLog,
    async adminGet<T>(path: string) {
      const res = await fetch(`http://${admin}${path}`);
      const text = await res.text();
      return { status: res.status, json: (text ? JSON.parse(text) : null) as T };
    },
    async metrics() {
      return (await fetch(`http://${admin}/metrics`)).text();
    },
    exited,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      const r = await exited;
      clearTimeout(timer);
      return r;
    },
  };
  await waitForLog((r) => r.msg === 'listening', 'listening');
  return proc;
}

/** The metric's value for the sample whose labels include all of `labels` (0 when absent). */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = m[2] ?? '';
    if (Object.entries(labels).every(([k, v]) => have.includes(`${k}="${v}"`))) total += Number(m[3]);
  }
  return total;
}

/** Polls `fn` until it returns a value other than undefined (no timing is asserted). */
export async function eventually<T>(
  fn: () => Promise<T | undefined>,
  what: string,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
