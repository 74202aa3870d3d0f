/** The store a command works on (docs/store.md). */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DB_FILE, openSqliteStore, type Store } from '../store/index.js';
import { RuntimeError } from '../util/index.js';
import type { CommandContext } from './context.js';

/**
 * Opens the command's store. `mustExist`: a read-only command, which must not leave an empty
 * database behind a mistyped `--state-dir`.
 */
export async function openCommandStore(
  ctx: CommandContext,
  opts: { mustExist?: string } = {},
): Promise<Store> {
  if (opts.mustExist !== undefined && !existsSync(join(ctx.options.stateDir, DB_FILE)))
    throw new RuntimeError(opts.mustExist);
  return openSqliteStore(ctx.options.stateDir);
}
