/**
 * The configuration in files (`--config`, SPEC §3): read with the same loader as `pawl run` and
 * `pawl validate`, watched through the directories that hold them.
 */
import { existsSync, watch, type FSWatcher } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { dependencyProblems, loadConfig, type LoadOptions } from '../../config/index.js';
import { errorMessage, type Logger } from '../../util/index.js';
import type { ConfigRead, ConfigSource, Unreadable } from './types.js';

export interface FileSourceOptions {
  paths: string[];
  log: Logger;
  /**
   * Where Secrets that are not in the files are found (`--secrets-dir`, `PAWL_SECRET_*`), as
   * every command gives them to the loader; used at start and on each reload.
   */
  loadOptions?: LoadOptions;
  /** Debounce of file changes, ms (default 300). */
  debounceMs?: number;
}

export class FileSource implements ConfigSource {
  readonly paths: readonly string[];
  readonly #watchers: FSWatcher[] = [];
  #timer: NodeJS.Timeout | null = null;

  constructor(private readonly opts: FileSourceOptions) {
    this.paths = opts.paths;
  }

  async read(): Promise<ConfigRead | Unreadable> {
    let result;
    try {
      result = await loadConfig(this.opts.paths, this.opts.loadOptions);
    } catch (err) {
      // A path that vanished, or none given: a problem like any other, so a reload can refuse it.
      return {
        problems: [
          { location: { file: this.opts.paths.join(', ') }, severity: 'error', message: errorMessage(err) },
        ],
      };
    }
    const { config, problems, skipped } = result;
    const errors = problems.some((p) => p.severity === 'error')
      ? [...problems.filter((p) => p.severity === 'error'), ...dependencyProblems(skipped)]
      : [];
    return { config, warnings: problems, errors, skipped };
  }

  async watch(onChange: (reason: string) => void): Promise<void> {
    const debounce = this.opts.debounceMs ?? 300;
    const changed = () => {
      if (this.#timer) clearTimeout(this.#timer);
      this.#timer = setTimeout(() => {
        this.#timer = null;
        onChange('file change');
      }, debounce);
    };
    for (const p of this.opts.paths) {
      const abs = resolve(p);
      try {
        const isDir = (await stat(abs)).isDirectory();
        // A file is watched through its directory: editors and ConfigMap updates replace it by rename.
        const w = isDir
          ? watch(abs, { recursive: true }, changed)
          : watch(dirname(abs), (_e, f) => {
              if (f === null || f === basename(abs) || f === '..data') changed();
            });
        w.on('error', (err) =>
          this.opts.log.warn({ path: abs, err: errorMessage(err) }, 'cannot watch the configuration'),
        );
        w.unref();
        this.#watchers.push(w);
      } catch (err) {
        this.opts.log.warn(
          { path: abs, err: errorMessage(err) },
          'cannot watch the configuration; reload with SIGHUP',
        );
      }
    }
  }

  holds(file: string): boolean {
    return existsSync(file);
  }

  close(): void {
    if (this.#timer) clearTimeout(this.#timer);
    for (const w of this.#watchers.splice(0)) w.close();
  }
}
