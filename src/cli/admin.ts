/**
 * The CLI's client of a running `pawl serve`'s admin API (docs/api.md): `--server URL` (env
 * PAWL_SERVER; default the daemon's default admin listener) and its admin token from
 * `--token-file` (env PAWL_ADMIN_TOKEN_FILE) or env PAWL_ADMIN_TOKEN. The token is handed to the
 * redactor before any request is made.
 */
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { RuntimeError, UsageError, errorMessage } from '../util/index.js';
import type { CommandContext } from './context.js';

export const DEFAULT_SERVER = 'http://127.0.0.1:9293';

export interface ServerOptions {
  server?: string;
  tokenFile?: string;
}

/** `--server` and `--token-file`, for the commands that talk to a daemon. */
export function withServerOptions(cmd: Command, serverHelp: string): Command {
  return cmd
    .option('--server <url>', `${serverHelp} (env PAWL_SERVER)`)
    .option(
      '--token-file <file>',
      "the daemon's admin token, the file given to its --admin-token-file (env PAWL_ADMIN_TOKEN_FILE, or PAWL_ADMIN_TOKEN)",
    );
}

export interface AdminClient {
  readonly base: string;
  get<T>(path: string): Promise<T>;
  post<T>(path: string, body: unknown, signal?: AbortSignal): Promise<{ status: number; json: T }>;
}

/** The server named by the options or env, or null when none is (then the caller reads the store). */
export function namedServer(opts: ServerOptions): string | null {
  return opts.server ?? (process.env.PAWL_SERVER || null);
}

export async function adminClient(
  ctx: CommandContext,
  opts: ServerOptions,
  server: string,
): Promise<AdminClient> {
  let base: URL;
  try {
    base = new URL(/^[a-z]+:\/\//i.test(server) ? server : `http://${server}`);
  } catch {
    throw new UsageError(`--server ${server} is not a URL; e.g. http://127.0.0.1:9293`);
  }
  const token = await adminToken(opts);
  if (token !== null) ctx.redactor.add(token);
  const where = base.origin;
  const headers: Record<string, string> = {
    accept: 'application/json',
    ...(token !== null ? { authorization: `Bearer ${token}` } : {}),
  };
  const call = async (method: string, path: string, body?: unknown, signal?: AbortSignal) => {
    let res: Response;
    try {
      res = await fetch(new URL(path, base), {
        method,
        headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      const cause =
        err instanceof Error && err.cause instanceof Error ? err.cause.message : errorMessage(err);
      throw new RuntimeError(
        `cannot reach pawl serve at ${where} (${cause}): is it running, and is that its --admin-listen? Give --server URL`,
      );
    }
    const text = await res.text();
    let json: unknown = null;
    try {
      json = text === '' ? null : JSON.parse(text);
    } catch {
      throw new RuntimeError(
        `${where}${path} answered ${res.status} with no JSON: is that pawl serve's admin listener?`,
      );
    }
    if (res.status === 401)
      throw new UsageError(
        token === null
          ? `pawl serve at ${where} needs its admin token: give --token-file FILE (the daemon's --admin-token-file) or set PAWL_ADMIN_TOKEN`
          : `pawl serve at ${where} refused the admin token: give the file its --admin-token-file names`,
      );
    return { status: res.status, json };
  };
  return {
    base: where,
    async get<T>(path: string): Promise<T> {
      const { status, json } = await call('GET', path);
      if (status !== 200) throw new RuntimeError(`${where}${path}: ${status} ${errorOf(json)}`);
      return json as T;
    },
    async post<T>(path: string, body: unknown, signal?: AbortSignal) {
      const r = await call('POST', path, body, signal);
      return { status: r.status, json: r.json as T };
    },
  };
}

/** The `error` of an answer's JSON, else the JSON itself. */
export function errorOf(json: unknown): string {
  if (typeof json === 'object' && json !== null && 'error' in json) return String(json.error);
  return JSON.stringify(json);
}

async function adminToken(opts: ServerOptions): Promise<string | null> {
  const file = opts.tokenFile ?? (process.env.PAWL_ADMIN_TOKEN_FILE || undefined);
  if (file !== undefined) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      throw new UsageError(`--token-file ${file}: ${errorMessage(err)}`);
    }
    const token = text.trim();
    if (token === '') throw new UsageError(`--token-file ${file} is empty`);
    return token;
  }
  const env = process.env.PAWL_ADMIN_TOKEN?.trim();
  return env ? env : null;
}
