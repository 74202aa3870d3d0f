/**
 * Where the daemon's configuration comes from. The files and folders given with
 * `--config` (files.ts), or a Kubernetes API server (kube.ts). A source only reads and watches:
 * what the daemon derives from a read is the same whatever the source; the reload rule is all or
 * nothing for files and per object for the API server (`perObject`, configuration.ts).
 */
import type { Config, SkippedObject } from '../../config/index.js';
import type { Problem } from '../../util/index.js';

/** One read of every object: the valid ones, and what was wrong with the others. */
export interface ConfigRead {
  config: Config;
  /** Everything the reader said, warnings and errors. */
  warnings: Problem[];
  /** The errors, with one more per object skipped because it needs an invalid one; empty when valid. */
  errors: Problem[];
  /** The objects left out (invalid, or needing one that is): readiness looks at them. */
  skipped: SkippedObject[];
}

/** Nothing could be read at all (a path that vanished, none given, an unreachable API). */
export interface Unreadable {
  problems: Problem[];
}

export interface ConfigSource {
  /** What it reads, in the user's words (the `--config` paths): for the status page. */
  readonly paths: readonly string[];
  /** Reads every object; never throws (an unreadable source answers `Unreadable`). */
  read(): Promise<ConfigRead | Unreadable>;
  /**
   * From now until `close`, calls `onChange` (debounced) when what it reads may have changed.
   * What it cannot watch it logs, and a reload by SIGHUP still works.
   */
  watch(onChange: (reason: string) => void): Promise<void>;
  close(): void;
  /**
   * Each object stands on its own (an API server's objects): a reload takes the valid ones and
   * reports the others, as the first read does, and an object that is gone stops. Without it a
   * reload is all or nothing, and one that loses a file's objects is refused (configuration.ts).
   */
  readonly perObject?: boolean;
  /**
   * Whether a file the running configuration read objects from is still there: a file that
   * is, yet yields none of them now, was truncated or half-written (configuration.ts refuses
   * the reload). A source without files leaves it out.
   */
  holds?(file: string): boolean;
}
