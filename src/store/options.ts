import { UsageError } from '../util/index.js';
import type { StoreOptions } from './types.js';

/** A whole number of at least `min` from the environment; undefined when unset or empty. */
export function envNumber(env: NodeJS.ProcessEnv, name: string, min: number): number | undefined {
  const v = env[name];
  if (v === undefined || v === '') return undefined;
  if (!/^\d+$/.test(v) || Number(v) < min)
    throw new UsageError(`${name} must be a whole number of at least ${min}, not "${v}"`);
  return Number(v);
}

/** Raw-response bounds from the environment (`PAWL_RAW_SCANS_KEPT`, `PAWL_RAW_BYTES_PER_SCAN`), for options not given. */
export function storeOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): StoreOptions {
  const read = (name: string, min: number) => envNumber(env, name, min);
  const out: StoreOptions = {};
  const kept = read('PAWL_RAW_SCANS_KEPT', 0);
  const bytes = read('PAWL_RAW_BYTES_PER_SCAN', 1024);
  if (kept !== undefined) out.rawScansKept = kept;
  if (bytes !== undefined) out.rawBytesPerScan = bytes;
  return out;
}

/** The raw-response bounds every backend applies. */
export function rawBounds(options: StoreOptions): { kept: number; bytes: number } {
  return {
    kept: Math.max(0, Math.floor(options.rawScansKept ?? 5)),
    bytes: Math.max(1024, Math.floor(options.rawBytesPerScan ?? 1024 * 1024)),
  };
}
