/**
 * The store a command works on (docs/store.md): `--store` or `PAWL_STORE` (a SQLite file or a
 * postgres:// URL), else `STATE_DIR/pawl.db`. The PostgreSQL password comes from
 * `--store-password-file` or `PAWL_STORE_PASSWORD` (or a URL in `PAWL_STORE`), never from the
 * command line, and is handed to the context's redactor before anything can print it.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DB_FILE, openStoreFrom, parseStoreSpec, type Store, type StoreSpec } from '../store/index.js';
import { RuntimeError, UsageError, errorMessage } from '../util/index.js';
import type { CommandContext } from './context.js';

/** The spec the options name: `--store`/`PAWL_STORE`, or the state directory's file. */
export function commandStoreSpec(ctx: CommandContext): StoreSpec | { kind: 'state-dir'; stateDir: string } {
  const given = ctx.options.store;
  if (!given) return { kind: 'state-dir', stateDir: ctx.options.stateDir };
  const spec = parseStoreSpec(given.value, given.from);
  if (spec.kind === 'postgres' && spec.password) ctx.redactor.add(spec.password);
  return spec;
}

/** `--store-password-file` (its first line), else `PAWL_STORE_PASSWORD`. */
export async function commandStorePassword(ctx: CommandContext): Promise<string | undefined> {
  const file = ctx.options.storePasswordFile;
  if (file !== undefined) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      throw new UsageError(`--store-password-file ${file}: ${errorMessage(err)}`);
    }
    const password = text.split(/\r?\n/)[0] ?? '';
    if (password === '') throw new UsageError(`--store-password-file ${file} is empty`);
    return password;
  }
  const env = process.env.PAWL_STORE_PASSWORD;
  return env === undefined || env === '' ? undefined : env;
}

/**
 * The state directory, made with a `.gitignore` of `*` when pawl makes it: `./.pawl` inside a
 * checkout (the default) holds clones, a database and key files that must never be committed.
 */
export function createStateDir(dir: string): void {
  if (existsSync(dir)) return;
  try {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, '.gitignore'), '# made by pawl: nothing here belongs in Git\n*\n');
  } catch (err) {
    throw new RuntimeError(`cannot create the state directory ${dir}: ${errorMessage(err)}`);
  }
}

/** The SQLite file the options name does not exist yet (false for PostgreSQL: it is always there). */
export function storeMissing(ctx: CommandContext): boolean {
  const spec = commandStoreSpec(ctx);
  const file =
    spec.kind === 'state-dir' ? join(spec.stateDir, DB_FILE) : spec.kind === 'sqlite' ? spec.file : null;
  return file !== null && !existsSync(file);
}

/**
 * Opens the command's store. `mustExist`: a read-only command's words when there is no SQLite
 * file yet, so that a mistyped `--state-dir` or `--store` leaves no empty database behind.
 */
export async function openCommandStore(
  ctx: CommandContext,
  opts: { mustExist?: string } = {},
): Promise<Store> {
  const spec = commandStoreSpec(ctx);
  const password = await commandStorePassword(ctx);
  if (password !== undefined) ctx.redactor.add(password);
  if (opts.mustExist !== undefined && storeMissing(ctx)) throw new RuntimeError(opts.mustExist);
  if (spec.kind === 'state-dir') createStateDir(spec.stateDir);
  return openStoreFrom(spec, { ...(password !== undefined ? { password } : {}), redactor: ctx.redactor });
}
