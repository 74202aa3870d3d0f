/**
 * Parsing YAML is most of a scan's cost, and `yaml` runs at a few MB/s. For large trees a worker
 * thread parses part of the screened files while the main thread parses the rest. Whenever the
 * worker cannot start or fails, its share is parsed on the main thread: results never depend on it.
 */
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { findMarkers } from './markers.js';

export interface ParseJob {
  file: string;
  text: string;
}
export type ParseResult = ReturnType<typeof findMarkers>;

/** Below these, a worker's start-up costs more than it saves. */
export const PARALLEL_MIN_FILES = 200;
export const PARALLEL_MIN_BYTES = 256 * 1024;

/** Code for an eval worker that loads parse-worker from beside this module (built .js, or .ts through tsx). */
function workerSource(): string | null {
  try {
    const js = new URL('./parse-worker.js', import.meta.url);
    if (existsSync(fileURLToPath(js))) return `import(${JSON.stringify(js.href)});`;
    const ts = new URL('./parse-worker.ts', import.meta.url);
    if (!existsSync(fileURLToPath(ts))) return null;
    const api = import.meta.resolve('tsx/esm/api');
    return `import(${JSON.stringify(api)}).then((m) => { m.register(); return import(${JSON.stringify(ts.href)}); });`;
  } catch {
    return null;
  }
}

export class MarkerParser {
  private alive: boolean;

  private constructor(private worker: Worker | null) {
    this.alive = worker !== null;
    worker?.once('exit', () => {
      this.alive = false;
    });
  }

  /** Starts a helper thread when `candidates` files may need parsing and a second core exists. */
  static start(candidates: number): MarkerParser {
    if (
      candidates < PARALLEL_MIN_FILES ||
      availableParallelism() < 2 ||
      process.env.PAWL_PARSE_WORKERS === '0'
    ) {
      return new MarkerParser(null);
    }
    const source = workerSource();
    if (!source) return new MarkerParser(null);
    try {
      const worker = new Worker(source, { eval: true });
      worker.unref();
      // A failure to start is handled when the share is collected; keep it from being unhandled.
      worker.on('error', () => undefined);
      return new MarkerParser(worker);
    } catch {
      return new MarkerParser(null);
    }
  }

  async parseAll(jobs: readonly ParseJob[]): Promise<ParseResult[]> {
    const worker = this.worker;
    const total = jobs.reduce((n, j) => n + j.text.length, 0);
    if (!worker || !this.alive || total < PARALLEL_MIN_BYTES)
      return jobs.map((j) => findMarkers(j.text, j.file));
    // The worker takes the tail, a bit under half: it starts later than the main thread.
    let split = jobs.length;
    for (let bytes = 0; split > 0 && bytes < total * 0.45;) bytes += jobs[--split]!.text.length;
    const theirs = jobs.slice(split);
    const answer = new Promise<ParseResult[] | null>((resolve) => {
      worker.once('message', (m: unknown) =>
        resolve(Array.isArray(m) && m.length === theirs.length ? (m as ParseResult[]) : null),
      );
      worker.once('error', () => resolve(null));
      worker.once('exit', () => resolve(null));
    });
    worker.postMessage(theirs);
    const mine = jobs.slice(0, split).map((j) => findMarkers(j.text, j.file));
    const other = (await answer) ?? theirs.map((j) => findMarkers(j.text, j.file));
    return [...mine, ...other];
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    if (w) await w.terminate();
  }
}
