/**
 * A real Gitea for a test file: scripts/gitea.sh starts it on a free loopback port with SQLite,
 * an admin user and an API token. One server per test file (start in `before`, `close` in
 * `after`); repositories are made through its API, branches pushed over its Git HTTP.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);
const root = resolve(import.meta.dirname, '..', '..');
const script = join(root, 'scripts', 'gitea.sh');

export interface TestGitea {
  dir: string;
  url: string;
  user: string;
  password: string;
  token: string;
  /** Calls Gitea's API as the admin; throws on a status other than 2xx. */
  api<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
  /** Creates a repository owned by the admin; returns its Git HTTP URL (no credentials). */
  createRepo(name: string): Promise<string>;
  /** The Git HTTP URL with the admin's credentials in it, for a person's `git push` in a test. */
  authedGitUrl(name: string): string;
  /**
   * Returns once Gitea has taken in the first push to the repository. Gitea clears a
   * repository's `empty` flag from its push queue, after `git push` has returned, and answers 404
   * to the pull-request API of an empty repository; on a busy machine the queue runs late.
   */
  pushed(name: string): Promise<void>;
  close(): Promise<void>;
}

export async function startGitea(): Promise<TestGitea> {
  const dir = await mkdtemp(join(tmpdir(), 'pawl-gitea-'));
  const down = async (): Promise<void> => {
    await exec('bash', [script, 'down', dir]);
  };
  let info: { url: string; user: string; password: string; token: string };
  try {
    await exec('bash', [script, 'up', dir], { maxBuffer: 1 << 24 });
    info = JSON.parse(await readFile(join(dir, 'gitea.json'), 'utf8')) as typeof info;
  } catch (err) {
    await down().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  const api = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(`${info.url}/api/v1${path}`, {
      method,
      headers: {
        authorization: `token ${info.token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`gitea ${method} ${path}: ${res.status} ${text}`);
    return (text === '' ? undefined : JSON.parse(text)) as T;
  };
  const host = new URL(info.url).host;
  return {
    dir,
    ...info,
    api,
    createRepo: async (name) => {
      await api('POST', '/user/repos', { name, default_branch: 'main', auto_init: false });
      return `${info.url}/${info.user}/${name}.git`;
    },
    authedGitUrl: (name) =>
      `http://${encodeURIComponent(info.user)}:${encodeURIComponent(info.password)}@${host}/${info.user}/${name}.git`,
    pushed: async (name) => {
      // Polled: Gitea offers no event for its push queue. Each try is one request; the bound
      // is generous because only a failure takes it.
      for (let i = 0; i < 600; i++) {
        const repo = await api<{ empty: boolean }>('GET', `/repos/${info.user}/${name}`);
        if (!repo.empty) return;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`gitea: ${name} still empty 60 s after its first push`);
    },
    close: async () => {
      await down();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
